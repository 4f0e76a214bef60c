#!/usr/bin/env python3
"""dlaunch over SSH against pdsh and Open MPI's mpirun, side by side in one run
over the same real sshd servers (network namespaces with 198.18.x.x addresses
when root, loopback ports otherwise): 8 hosts x 8 ranks of /bin/true, the
agent already uploaded. Median wall time of N runs each, interleaved.

usage: bench/ssh/compare_pdsh.py [--hosts 8] [--ranks 8] [--runs 10]
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "integration"))
import harness  # noqa: E402
import sshd_harness  # noqa: E402


def timed(cmd, env):
    start = time.perf_counter()
    r = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    elapsed = time.perf_counter() - start
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:3])}... failed ({r.returncode}): {r.stderr[-800:]}")
    return elapsed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hosts", type=int, default=8)
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--runs", type=int, default=10)
    args = ap.parse_args()
    with sshd_harness.SshHosts(args.hosts) as hosts:
        hosts.write_known_hosts()
        env = hosts.env()
        hosts_file = hosts.hosts_file([args.ranks] * args.hosts)
        # OpenSSH's client takes its settings from -F, not from $HOME.
        cfg = os.path.join(hosts.tmp, "ssh_config")
        with open(cfg, "w") as f:
            for h in hosts.hosts:
                f.write(f"Host {h['name']}\n  HostName {h['address']}\n  Port {h['port']}\n"
                        f"  User root\n  IdentityFile {hosts.client_key}\n"
                        f"  UserKnownHostsFile {os.path.join(hosts.home, '.ssh', 'known_hosts')}\n"
                        f"  BatchMode yes\n")
        hostfile = os.path.join(hosts.tmp, "mpi_hosts")
        with open(hostfile, "w") as f:
            for h in hosts.hosts:
                f.write(f"{h['name']} slots={args.ranks}\n")
        names = ",".join(h["name"] for h in hosts.hosts)
        commands = {
            "dlaunch": [harness.DLAUNCH, "--hosts", hosts_file, "--", "/bin/true"],
            "pdsh -R ssh true": ["pdsh", "-R", "ssh", "-w", names, "true"],
        }
        tool_env = dict(env, PDSH_SSH_ARGS=f"-F {cfg} -x %h", PDSH_SSH_ARGS_APPEND="",
                        OMPI_MCA_plm_rsh_agent=f"ssh -F {cfg}")
        if shutil.which("mpirun"):
            commands["mpirun --hostfile"] = [
                "mpirun", "--allow-run-as-root", "--hostfile", hostfile, "-np",
                str(args.hosts * args.ranks), "--mca", "btl", "self,tcp", "/bin/true"]
        timed(commands["dlaunch"], env)  # uploads the agent once
        times = {name: [] for name in commands}
        skipped = set()
        for _ in range(args.runs):
            for name, cmd in commands.items():
                if name in skipped:
                    continue
                try:
                    times[name].append(timed(cmd, env if name == "dlaunch" else tool_env))
                except SystemExit as e:
                    print(f"{name}: {e}")
                    skipped.add(name)
        where = "network namespaces" if hosts.netns else "loopback ports"
        print(f"{args.hosts} sshd hosts ({where}) x {args.ranks} ranks of /bin/true, "
              f"median of {args.runs}:")
        for name, t in times.items():
            if t:
                print(f"  {name:20s} {statistics.median(t) * 1000:8.1f} ms")
        if times["dlaunch"] and times["pdsh -R ssh true"]:
            ratio = statistics.median(times["pdsh -R ssh true"]) / statistics.median(times["dlaunch"])
            print(f"  pdsh/dlaunch: {ratio:.2f}x (above 1: dlaunch faster)")


if __name__ == "__main__":
    main()
