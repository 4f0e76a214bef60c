#!/usr/bin/env python3
"""What a container per rank costs (--image, podman), side by side with plain
ranks on this machine, interleaved A B A B after a warm-up:

1. 8 ranks of /bin/true (--nproc-per-node 8): wall time of the whole job;
2. mnist_dist on 2 ranks (Gloo, CPU): the samples/s it reports.

Needs root and podman (apt-get install podman runc catatonit) and
busybox-static. podman keeps its storage in a temporary directory; the images
are built here: busybox for /bin/true, and an empty usr-merged root into which
the host's /usr comes read-only (--mount) for mnist_dist's libraries.

  sudo bench/core/container_overhead.py [--runs 5] [--bin-dir build/bin]
"""

import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

TINY = "localhost/dlaunch-bench-tiny:1"
HOSTPY = "localhost/dlaunch-bench-hostpy:1"


def podman_env(d):
    nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    nproc = min(4096, resource.getrlimit(resource.RLIMIT_NPROC)[1])
    with open(f"{d}/storage.conf", "w") as f:
        f.write(f'[storage]\ndriver = "overlay"\ngraphroot = "{d}/graph"\nrunroot = "{d}/run"\n')
    with open(f"{d}/containers.conf", "w") as f:
        f.write(f'[containers]\ndefault_ulimits = ["nofile={min(1024, nofile)}:{nofile}", '
                f'"nproc={nproc}:{nproc}"]\n[engine]\nruntime = "runc"\n'
                f'tmp_dir = "{d}/libpod"\n')
    return {**os.environ, "CONTAINERS_CONF": f"{d}/containers.conf",
            "CONTAINERS_STORAGE_CONF": f"{d}/storage.conf"}


def import_root(d, env, name, fill):
    root = os.path.join(d, name.split("/")[-1].split(":")[0])
    os.makedirs(root)
    fill(root)
    subprocess.run(["tar", "-C", root, "-cf", root + ".tar", "."], check=True)
    subprocess.run(["podman", "import", root + ".tar", name], env=env, check=True,
                   capture_output=True)


def tiny(root):
    os.makedirs(f"{root}/bin")
    shutil.copy("/bin/busybox", f"{root}/bin/busybox")
    for applet in ("sh", "true"):
        os.symlink("busybox", f"{root}/bin/{applet}")


def hostpy(root):
    for sub in ("usr", "etc", "tmp"):
        os.makedirs(f"{root}/{sub}")
    for sub in ("bin", "lib", "lib64", "sbin"):
        os.symlink(f"usr/{sub}", f"{root}/{sub}")


def timed(cmd, env, cwd):
    start = time.monotonic()
    r = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{r.stderr[-2000:]}")
    return time.monotonic() - start, r.stdout


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--bin-dir", default=os.path.join(os.path.dirname(__file__), "../../build/bin"))
    a = p.parse_args()
    bin_dir = os.path.abspath(a.bin_dir)
    dlaunch = os.path.join(bin_dir, "dlaunch")
    d = tempfile.mkdtemp(prefix="dlaunch-bench-podman-")
    env = podman_env(d)
    work = os.path.join(d, "work")
    os.makedirs(work)
    try:
        import_root(d, env, TINY, tiny)
        import_root(d, env, HOSTPY, hostpy)
        true_plain = [dlaunch, "--nproc-per-node", "8", "--", "/bin/true"]
        true_image = [dlaunch, "--nproc-per-node", "8", "--image", TINY,
                      "--container-engine", "podman", "--", "/bin/true"]
        mnist = ["--", os.path.join(bin_dir, "mnist_dist"), "--synthetic", "12000",
                 "--epochs", "1"]
        mnist_plain = [dlaunch, "--nproc-per-node", "2", *mnist]
        mnist_image = [dlaunch, "--nproc-per-node", "2", "--image", HOSTPY,
                       "--container-engine", "podman", "--mount", "/usr:/usr:ro",
                       "--mount", "/etc/alternatives:/etc/alternatives:ro",
                       "--mount", f"{bin_dir}:{bin_dir}:ro", *mnist]
        results = {k: [] for k in ("true_plain", "true_image", "mnist_plain", "mnist_image")}
        for run in range(a.runs + 1):  # run 0 warms caches up and is not counted
            for key, cmd in (("true_plain", true_plain), ("true_image", true_image)):
                seconds, _ = timed(cmd, env, work)
                if run:
                    results[key].append(seconds)
            for key, cmd in (("mnist_plain", mnist_plain), ("mnist_image", mnist_image)):
                _, out = timed(cmd, env, work)
                m = re.search(r"samples/s=([0-9.]+)", out)
                if run and m:
                    results[key].append(float(m.group(1)))
        med = {k: statistics.median(v) for k, v in results.items()}
        print(f"machine: {os.cpu_count()} cores, {os.uname().release}; podman "
              + subprocess.run(["podman", "--version"], capture_output=True,
                               text=True).stdout.split()[-1])
        print(f"runs: {a.runs} each, interleaved, after one warm-up")
        for k, v in results.items():
            print(f"  {k:12s} median {med[k]:9.3f}  min {min(v):9.3f}  max {max(v):9.3f}")
        print(f"8 ranks of /bin/true: {med['true_image']:.2f} s in containers against "
              f"{med['true_plain']:.2f} s plain ({med['true_image'] / med['true_plain']:.1f}x)")
        print(f"mnist_dist, 2 ranks: {med['mnist_image']:.0f} samples/s in containers against "
              f"{med['mnist_plain']:.0f} plain ({med['mnist_image'] / med['mnist_plain']:.3f}x)")
    finally:
        subprocess.run(["podman", "rm", "-af"], env=env, capture_output=True)
        subprocess.run(["podman", "rmi", "-af"], env=env, capture_output=True)
        subprocess.run(["umount", "-R", f"{d}/graph/overlay"], capture_output=True)
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
