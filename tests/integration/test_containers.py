"""Ranks in containers (--image) with podman on SSH hosts in network namespaces.

The image is built here from busybox-static through `podman import` (no
registry). podman keeps its storage in this test's own directory (vfs driver)
through CONTAINERS_STORAGE_CONF and CONTAINERS_CONF, which each test host's
sshd sets for its sessions (SetEnv). The hosts share this machine's
filesystem, so that one storage is every host's: `podman ps -a --filter
label=dlaunch.job=NAME` there sees the containers of every host.

containers.conf here does what such a host needs (README, "Ranks in
containers"): the runc runtime (the cgroup layout is hybrid) and default
ulimits within this machine's hard limits.
"""

import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
import sshd_harness  # noqa: E402
from harness import wait_for  # noqa: E402

IMAGE = "localhost/dlaunch-test-tiny:1"
# The image that only --image-file brings: saved to an archive, then removed.
FILE_IMAGE = "localhost/dlaunch-test-from-file:1"
# An image of nothing but the usr-merged layout: the host's /usr (Debian's
# python3-torch in it) comes in read-only by --mount, with /etc/alternatives,
# through which libblas is found.
HOST_PYTHON_IMAGE = "localhost/dlaunch-test-hostpy:1"
TORCH_PY = "/usr/bin/python3"
DDP_SCRIPT = r"""
import os, torch, torch.distributed as dist
dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)
model = torch.nn.Linear(4, 1)
ddp = torch.nn.parallel.DistributedDataParallel(model)
opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
torch.manual_seed(100 + rank)  # each rank its own data: DDP averages the gradients
ddp(torch.randn(8, 4)).pow(2).mean().backward()
opt.step()
total = torch.tensor([float(rank)])
dist.all_reduce(total)
print(f"ddp rank={rank} world={world} sum={total.item():.0f} "
      f"w={model.weight.view(-1)[0].item():.6f} "
      f"in_image={not os.path.exists('/etc/os-release')}", flush=True)
dist.destroy_process_group()
"""
BUSYBOX = "/bin/busybox"


def require_podman():
    if os.geteuid() != 0:
        raise unittest.SkipTest("not root: network namespaces and podman's storage need root")
    if not shutil.which("podman"):
        raise unittest.SkipTest("missing: podman (podman runc catatonit)")
    # A static busybox names no dynamic loader: it runs in an image with no libc.
    if not os.path.exists(BUSYBOX) or subprocess.run(["ldd", BUSYBOX],
                                                     capture_output=True).returncode == 0:
        raise unittest.SkipTest("missing: a static /bin/busybox for the test image "
                                "(busybox-static)")


class PodmanStore:
    """podman configured to keep everything in one temporary directory."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="dlaunch-podman-")
        self.storage_conf = os.path.join(self.dir, "storage.conf")
        self.containers_conf = os.path.join(self.dir, "containers.conf")
        with open(self.storage_conf, "w") as f:
            f.write(f'[storage]\ndriver = "vfs"\ngraphroot = "{self.dir}/graph"\n'
                    f'runroot = "{self.dir}/run"\n')
        nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        nproc = min(4096, resource.getrlimit(resource.RLIMIT_NPROC)[1])
        with open(self.containers_conf, "w") as f:
            f.write(f'[containers]\ndefault_ulimits = ["nofile={min(1024, nofile)}:{nofile}", '
                    f'"nproc={nproc}:{nproc}"]\n'
                    f'[engine]\nruntime = "runc"\ntmp_dir = "{self.dir}/libpod"\n'
                    f'volume_path = "{self.dir}/volumes"\n')

    def env(self):
        return {"CONTAINERS_CONF": self.containers_conf,
                "CONTAINERS_STORAGE_CONF": self.storage_conf}

    def podman(self, *args, check=True):
        return subprocess.run(["podman", *args], env={**os.environ, **self.env()},
                              capture_output=True, text=True, check=check, timeout=120)

    def build_tiny_image(self):
        root = os.path.join(self.dir, "rootfs")
        os.makedirs(os.path.join(root, "bin"))
        shutil.copy(BUSYBOX, os.path.join(root, "bin", "busybox"))
        for applet in ("sh", "cat", "echo", "id", "sleep", "pwd", "touch", "ls", "env",
                       "true"):
            os.symlink("busybox", os.path.join(root, "bin", applet))
        self.import_root(root, IMAGE)

    def saved_file_image(self):
        """An archive of FILE_IMAGE (busybox and a marker file), which podman no
        longer holds."""
        root = os.path.join(self.dir, "fileroot")
        os.makedirs(os.path.join(root, "bin"))
        shutil.copy(BUSYBOX, os.path.join(root, "bin", "busybox"))
        for applet in ("sh", "cat"):
            os.symlink("busybox", os.path.join(root, "bin", applet))
        with open(os.path.join(root, "image-marker"), "w") as f:
            f.write("from-the-file\n")
        self.import_root(root, FILE_IMAGE)
        archive = os.path.join(self.dir, "from-file.tar")
        self.podman("save", "--output", archive, FILE_IMAGE)
        self.podman("rmi", FILE_IMAGE)
        return archive

    def build_host_python_image(self):
        root = os.path.join(self.dir, "hostpy")
        for d in ("usr", "etc", "tmp"):
            os.makedirs(os.path.join(root, d))
        os.chmod(os.path.join(root, "tmp"), 0o1777)
        for d in ("bin", "lib", "lib64", "sbin"):
            os.symlink(f"usr/{d}", os.path.join(root, d))
        self.import_root(root, HOST_PYTHON_IMAGE)

    def import_root(self, root, image):
        tar = os.path.join(self.dir, os.path.basename(root) + ".tar")
        subprocess.run(["tar", "-C", root, "-cf", tar, "."], check=True)
        self.podman("import", tar, image)

    def containers(self, job):
        out = self.podman("ps", "-a", "-q", "--filter", f"label=dlaunch.job={job}").stdout
        return out.split()

    def close(self):
        self.podman("rm", "-af", check=False)
        self.podman("rmi", "-af", check=False)
        shutil.rmtree(self.dir, ignore_errors=True)


class ContainersTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        require_podman()
        harness.require_binaries("dlaunch", "dlaunch-agent")
        cls.store = PodmanStore()
        try:
            cls.store.build_tiny_image()
            set_env = " ".join(f"{k}={v}" for k, v in cls.store.env().items())
            # Each host its own image cache (--image-file), as separate machines.
            cls.caches = os.path.join(cls.store.dir, "caches")
            cls.hosts = sshd_harness.SshHosts(
                2, cgroups=True,
                sshd_extra=lambda name: f"SetEnv {set_env} XDG_CACHE_HOME={cls.caches}/{name}\n")
            cls.hosts.__enter__()
        except BaseException:
            cls.store.close()
            raise
        cls.hosts.write_known_hosts()
        cls.hosts_file = cls.hosts.hosts_file([2, 2])
        cls.workdir = tempfile.mkdtemp(prefix="dlaunch-cwork-")

    @classmethod
    def tearDownClass(cls):
        cls.hosts.close()
        cls.store.close()
        shutil.rmtree(cls.workdir, ignore_errors=True)

    def setUp(self):
        self.job = f"ctr-{os.getpid()}-{self._testMethodName[5:25].replace('_', '-')}"
        self.proc = None

    def tearDown(self):
        harness.end_job_process(self.proc, self.job)
        for cid in self.store.containers(self.job):
            self.store.podman("rm", "-f", cid, check=False)

    def args(self, *extra):
        return ["--hosts", self.hosts_file, "--name", self.job, "--image", IMAGE,
                "--container-engine", "podman", "--workdir", self.workdir, "--grace", "2",
                "--heartbeat-timeout", "4", *extra]

    def start_sleeping(self, *extra, script='echo "up $RANK"; exec sleep 300'):
        cmd = [harness.DLAUNCH, *self.args(*extra), "--", "/bin/sh", "-c", script]
        self.proc = subprocess.Popen(cmd, env=self.hosts.env(), stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        self.assertTrue(wait_for(lambda: len(self.store.containers(self.job)) == 4, 60),
                        "four containers did not start")

    def finish(self):
        out, err = self.proc.communicate(timeout=120)
        return self.proc.returncode, out, err

    def assertNoContainerLeft(self, timeout=30):
        self.assertTrue(wait_for(lambda: not self.store.containers(self.job), timeout),
                        f"containers of {self.job} left: "
                        + self.store.podman("ps", "-a").stdout)

    def test_ranks_in_containers_get_their_environment_and_output_and_exit_code(self):
        script = ('echo "R=$RANK L=$LOCAL_RANK W=$WORLD_SIZE M=${MASTER_ADDR:+set} '
                  'T=$TOKEN_X J=$DLAUNCH_JOB D=$(pwd) U=$(id -u) PATH=$PATH '
                  'IMG=$([ -e /etc/os-release ] && echo host || echo image)"; '
                  'touch "out-$RANK"; [ "$RANK" = 3 ] || exit 0; '
                  # Rank 3's failure stops the others: it waits until every
                  # line has reached dlaunch's terminal (the test opens the
                  # gate then), or a line still in a container engine's
                  # buffers would be cut off with its container.
                  'i=0; while [ $i -lt 1200 ] && [ ! -e gate ]; do sleep 0.1; i=$((i + 1)); '
                  'done; exit 3')
        gate = os.path.join(self.workdir, "gate")
        self.proc = subprocess.Popen(
            [harness.DLAUNCH, *self.args("-e", "TOKEN_X=s3cret"), "--", "/bin/sh", "-c", script],
            env=self.hosts.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            stdout = []
            lines = []
            for line in self.proc.stdout:
                stdout.append(line)
                if "R=" in line:
                    lines.append(line.rstrip("\n"))
                if len(lines) == 4:
                    break
            open(gate, "w").close()
            rest, err = self.proc.communicate(timeout=120)
        finally:
            if os.path.exists(gate):
                os.remove(gate)
        self.assertEqual(self.proc.returncode, 3, err)
        self.assertIn("rank 3 on h2 exited with code 3", err)
        lines = sorted(lines)
        self.assertEqual(len(lines), 4, "".join(stdout) + rest + err)
        for rank, line in enumerate(lines):
            self.assertIn(f"R={rank} L={rank % 2} W=4 M=set T=s3cret J={self.job} "
                          f"D={self.workdir} U=0 ", line)
            self.assertIn("IMG=image", line)  # the image's filesystem, not the host's
            # The host's PATH stays outside: the image's own (podman's default) applies.
            self.assertNotIn(os.path.dirname(harness.DLAUNCH), line)
        # The working directory is the host's, bind-mounted at the same path.
        self.assertEqual(sorted(f for f in os.listdir(self.workdir) if f.startswith("out-")),
                         ["out-0", "out-1", "out-2", "out-3"])
        self.assertNoContainerLeft(timeout=10)

    def test_values_never_on_a_command_line(self):
        cmd = [harness.DLAUNCH, *self.args("-e", "TOKEN_X=s3cret-value-42"), "--", "/bin/sh",
               "-c", 'echo "up $TOKEN_X"; exec sleep 300']
        self.proc = subprocess.Popen(cmd, env=self.hosts.env(), stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        self.assertTrue(wait_for(lambda: len(self.store.containers(self.job)) == 4, 60))
        seen = []
        for pid in os.listdir("/proc"):
            # dlaunch's own command line holds it: the user put it there.
            if not pid.isdigit() or int(pid) == self.proc.pid:
                continue
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    cmdline = f.read()
                if b"s3cret-value-42" in cmdline:
                    seen.append(cmdline.replace(b"\0", b" ").decode(errors="replace"))
            except OSError:
                pass
        self.assertEqual(seen, [], "the variable's value is on a command line")
        self.proc.send_signal(signal.SIGINT)
        code, out, _ = self.finish()
        self.assertEqual(out.count("up s3cret-value-42"), 4, out)
        self.assertNoContainerLeft()

    def test_ctrl_c_ends_every_container(self):
        self.start_sleeping()
        self.proc.send_signal(signal.SIGINT)
        code, out, err = self.finish()
        self.assertEqual(code, 130, err)
        # No engine's line in the ranks' output: podman passed a SIGCONT sent
        # after the SIGTERM on to a container gone, and runc printed
        # `level=error msg="container not running"` for 2 or 3 of the 4.
        self.assertNotIn("level=", out + err)
        self.assertNoContainerLeft()
        self.assertEqual(harness.wait_no_marker(self.job, 10), [])

    def test_a_rank_that_ignores_sigterm_is_killed_after_its_grace(self):
        # --grace 2: the agent kills the rank's engine client, then removes
        # its container; podman's rm waited its own 10 s more, so the agent
        # outlived the coordinator's patience and was killed.
        self.start_sleeping(script='trap "" TERM; echo "up $RANK"; while :; do sleep 1; done')
        self.proc.send_signal(signal.SIGINT)
        code, out, err = self.finish()
        self.assertEqual(code, 130, err)
        self.assertNotIn("did not exit in time", err)
        self.assertNoContainerLeft()
        r = subprocess.run([harness.DLAUNCH, "get", self.job, "--json"], env=self.hosts.env(),
                           capture_output=True, text=True, timeout=30)
        record = json.loads(r.stdout)
        self.assertEqual(record["status"], "STOPPED")
        self.assertNotIn("running", [n["state"] for n in record["nodes"]], record["nodes"])

    def test_kill_9_of_an_agent_leaves_no_container(self):
        self.start_sleeping()
        workers = harness.agent_workers_of(self.job)
        self.assertEqual(len(workers), 2, workers)
        guardian = harness.parent_of(workers[1])
        os.kill(workers[1], signal.SIGKILL)
        os.kill(guardian, signal.SIGKILL)  # the whole agent, guardian included
        code, _, err = self.finish()
        self.assertNotEqual(code, 0)
        # Whichever the coordinator hears first: the dropped connection, or the
        # SSH channel's exit status.
        self.assertRegex(err, r"lost the agent|the agent on h\d exited with code 137")
        self.assertNoContainerLeft()

    def test_containers_of_a_killed_reaper_are_removed_by_the_next_agent(self):
        self.start_sleeping()
        tokens = self.store.podman("ps", "-a", "--filter", f"label=dlaunch.job={self.job}",
                                   "--format", '{{index .Labels "dlaunch.agent"}}').stdout.split()
        reapers = sorted({int(t.split("-")[0]) for t in tokens})
        self.assertEqual(len(reapers), 2, tokens)
        workers = harness.agent_workers_of(self.job)
        # Everything of the job's agents, reapers and engine clients included
        # (a client that lives on removes its container): nobody is left to clean up.
        clients = [p for p in harness.processes_with_marker(self.job)
                   if harness.exe_name(p) == "podman"]
        victims = reapers + clients + [harness.parent_of(w) for w in workers] + workers
        # All frozen first: an agent that saw its clients die would stop the
        # round and remove its containers itself before its own turn came.
        for pid in victims:
            os.kill(pid, signal.SIGSTOP)
        for pid in victims:
            os.kill(pid, signal.SIGKILL)
        self.finish()
        self.assertEqual(len(self.store.containers(self.job)), 4)  # the fault was real
        r = self.hosts.dlaunch(["--hosts", self.hosts_file, "--image", IMAGE, "--", "/bin/true"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNoContainerLeft(timeout=10)

    def test_link_cut_leaves_no_container(self):
        if not self.hosts.netns:
            self.skipTest(harness.netns_reason() or "no network namespaces")
        self.start_sleeping()
        veth = f"dv{self.hosts.tag}h2"
        subprocess.run(["ip", "link", "set", veth, "down"], check=True)
        try:
            code, _, err = self.finish()
            self.assertNotEqual(code, 0, err)
            self.assertIn("lost the agent of node 1 (h2)", err)
            # h2's agent, cut off, stops its ranks itself.
            self.assertNoContainerLeft(timeout=60)
        finally:
            subprocess.run(["ip", "link", "set", veth, "up"], check=True)

    def test_torch_ddp_gloo_in_containers_on_two_hosts(self):
        if subprocess.run([TORCH_PY, "-c", "import torch"], capture_output=True).returncode:
            self.skipTest(f"missing: torch for {TORCH_PY} (python3-torch)")
        self.store.build_host_python_image()
        with open(os.path.join(self.workdir, "ddp_check.py"), "w") as f:
            f.write(DDP_SCRIPT)
        r = self.hosts.dlaunch(["--hosts", self.hosts_file, "--name", self.job, "--image",
                                HOST_PYTHON_IMAGE, "--mount", "/usr:/usr:ro", "--mount",
                                "/etc/alternatives:/etc/alternatives:ro", "--workdir",
                                self.workdir, "--python", TORCH_PY, "--", "ddp_check.py"],
                               timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = [line.split("] ", 1)[1] for line in r.stdout.splitlines() if "ddp rank=" in line]
        self.assertEqual(len(lines), 4, r.stdout)
        fields = [dict(kv.split("=") for kv in line.split()[1:]) for line in lines]
        self.assertEqual(sorted(f["rank"] for f in fields), ["0", "1", "2", "3"])
        self.assertTrue(all(f["world"] == "4" and f["sum"] == "6" for f in fields), lines)
        self.assertTrue(all(f["in_image"] == "True" for f in fields), lines)
        # DDP kept the replicas equal after a step on different data.
        self.assertEqual(len({f["w"] for f in fields}), 1, lines)

    def test_a_missing_image_names_the_host_and_the_engine(self):
        r = self.hosts.dlaunch(["--hosts", self.hosts_file, "--name", self.job, "--image",
                                "localhost/no-such-image:0", "--container-engine", "podman",
                                "--", "/bin/true"])
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("h1: --image localhost/no-such-image:0: podman cannot pull", r.stderr)

    def test_check_reports_the_engine_and_the_image_on_each_host(self):
        r = self.hosts.dlaunch(["check", "--hosts", self.hosts_file, "--image", IMAGE,
                                "--matrix-seconds", "0", "--json"])
        self.assertEqual(r.returncode, 0, r.stderr)
        hosts = json.loads(r.stdout)["hosts"]
        self.assertEqual(len(hosts), 2)
        for h in hosts:
            self.assertTrue(h["container_engine"].startswith("podman version"), h)
        ids = {h["image_id"] for h in hosts}
        self.assertEqual(len(ids), 1, ids)
        self.assertNotIn("absent", ids)
        expected = self.store.podman("image", "inspect", "--format", "{{.Id}}", IMAGE).stdout
        self.assertEqual(ids, {expected.strip()})

        r = self.hosts.dlaunch(["check", "--hosts", self.hosts_file, "--image",
                                "localhost/no-such-image:0", "--matrix-seconds", "0"])
        self.assertEqual(r.returncode, 0, r.stderr + r.stdout)  # a warning, not a failure
        self.assertIn("h1: the image is not there: a job pulls it first", r.stdout)

    def test_image_file_is_sent_once_cached_and_loaded_again_when_gone(self):
        archive = self.store.saved_file_image()
        size = os.path.getsize(archive)
        sent = re.compile(r"--image-file to (h\d): \d+ files written, (\d+) bytes sent")

        def run(name, *extra):
            r = self.hosts.dlaunch(
                ["--hosts", self.hosts_file, "--name", name, "--image-file", archive, *extra,
                 "--container-engine", "podman", "--workdir", self.workdir, "-v", "--",
                 "/bin/sh", "-c", 'echo "rank $RANK: $(cat /image-marker)"'])
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(r.stdout.count(": from-the-file"), 4, r.stdout + r.stderr)
            self.assertIn(f"h1: ranks run in containers of {FILE_IMAGE} (--image-file, podman",
                          r.stderr)
            return {host: int(n) for host, n in sent.findall(r.stderr)}, r.stderr

        try:
            # The first job sends the archive to each host, which loads it; through
            # SSH here, as to hosts that reach this machine only that way.
            got, err = run(self.job, "--rdzv-via-ssh")
            self.assertEqual(got, {"h1": size, "h2": size}, err)
            for host in ("h1", "h2"):
                cached = os.listdir(os.path.join(self.caches, host, "dlaunch", "images"))
                self.assertEqual(len([f for f in cached if f.endswith(".tar")]), 1, cached)
            # The next sends nothing.
            got, err = run(self.job + "-2")
            self.assertEqual(got, {"h1": 0, "h2": 0}, err)
            # An image removed from the engine since is loaded again from the cache.
            self.store.podman("rmi", FILE_IMAGE)
            got, err = run(self.job + "-3")
            self.assertEqual(got, {"h1": 0, "h2": 0}, err)
            self.assertEqual(self.store.podman("image", "exists", FILE_IMAGE,
                                               check=False).returncode, 0)
        finally:
            self.store.podman("rmi", "-f", FILE_IMAGE, check=False)

    def test_a_file_that_is_no_image_is_refused_before_anything_starts(self):
        not_an_image = os.path.join(self.workdir, "Dockerfile")
        with open(not_an_image, "w") as f:
            f.write("FROM debian:12\n")
        r = self.hosts.dlaunch(["--hosts", self.hosts_file, "--name", self.job, "--image-file",
                                not_an_image, "--", "/bin/true"])
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn(f"--image-file {not_an_image}: is not a container image", r.stderr)
        # A tar of a root filesystem passed the first bytes' check and failed
        # on every host: its entries show it is no image archive.
        import tarfile
        rootfs = os.path.join(self.workdir, "rootfs.tar")
        with tarfile.open(rootfs, "w") as tar:
            tar.add("/etc/hostname", arcname="etc/hostname")
        r = self.hosts.dlaunch(["--hosts", self.hosts_file, "--name", self.job, "--image-file",
                                rootfs, "--", "/bin/true"])
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn(f"--image-file {rootfs}: is a tar without an image's manifest.json",
                      r.stderr)
        # Compressed, only the host's engine can tell: it refuses it, and the
        # file does not stay in the host's cache.
        packed = os.path.join(self.workdir, "rootfs.tar.gz")
        with tarfile.open(packed, "w:gz") as tar:
            tar.add("/etc/hostname", arcname="etc/hostname")
        one_host = self.hosts.hosts_file([1], name="one-host.toml")
        r = self.hosts.dlaunch(["--hosts", one_host, "--name", self.job + "-gz",
                                "--image-file", packed, "--container-engine", "podman", "--",
                                "/bin/true"])
        self.assertNotEqual(r.returncode, 0)
        self.assertRegex(r.stderr, r"podman (cannot load|found no image in) ")
        self.assertIn("removed from this host's cache", r.stderr)
        for host in ("h1",):
            images = os.path.join(self.caches, host, "dlaunch", "images")
            left = [f for f in os.listdir(images) if f.endswith(".tar")] \
                if os.path.isdir(images) else []
            self.assertEqual(left, [], f"{host} keeps the archive it cannot load")

    def test_a_program_the_image_lacks_is_said_and_exits_127(self):
        # podman's init failed to exec it and exited 1: the job said only
        # "exited with code 1" after the init's own line.
        r = self.hosts.dlaunch([*self.args(), "--", "/no/such/program"])
        self.assertEqual(r.returncode, 127, r.stderr)
        self.assertRegex(r.stderr, r"rank \d on h\d could not start its program in its "
                                   r"container: No such file or directory \(is the program in "
                                   r"the image\?\)")

    def test_auto_says_which_engine(self):
        r = self.hosts.dlaunch(["--hosts", self.hosts_file, "--name", self.job, "--image",
                                IMAGE, "--", "/bin/true"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(f"h1: ranks run in containers of {IMAGE} (podman version", r.stderr)


if __name__ == "__main__":
    harness.main()
