"""The uploaded agent on hosts whose whole userland is not this machine's.

- A Debian 11 root (glibc 2.31), made with `debootstrap --variant=minbase
  bullseye` from the package archive this machine's apt uses, cached in the
  build directory between runs of the test command (test-roots/).
- A root that holds nothing but a static busybox and what its sshd needs.
  sshd's libraries, loader included, sit in a directory of their own that
  only sshd is told of, so the root has no /lib64/ld-linux-x86-64.so.2: a
  dynamically linked agent could not even start there.

Each root's own sshd runs chrooted in a network namespace of its own. On
each, a job uploads the agent and runs: the ranks start inside the root, a
rank's failure passes its exit code, and a stopped job leaves nothing."""

import os
import re
import shutil
import signal
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
import sshd_harness  # noqa: E402

CACHE = os.path.join(harness.BIN_DIR, "..", "test-roots")
SUITE = "bullseye"


def archive_uri():
    """The first Debian archive this machine's apt lists (deb822 or one-line)."""
    texts = []
    for path in ["/etc/apt/sources.list"] + [
            os.path.join("/etc/apt/sources.list.d", f)
            for f in sorted(os.listdir("/etc/apt/sources.list.d"))
            if os.path.isdir("/etc/apt/sources.list.d")]:
        try:
            with open(path) as f:
                texts.append(f.read())
        except OSError:
            pass
    for text in texts:
        for m in re.finditer(r"^URIs:\s*(\S+)|^deb\s+(?:\[[^\]]*\]\s+)?(\S+)", text, re.M):
            uri = m.group(1) or m.group(2)
            if "security" not in uri:
                return uri
    return None


def debian_root():
    """The cached bullseye root, made on first use (a few minutes)."""
    root = os.path.abspath(os.path.join(CACHE, SUITE))
    if os.path.exists(os.path.join(root, "usr", "sbin", "sshd")):
        return root
    uri = archive_uri()
    if uri is None:
        raise unittest.SkipTest("no Debian archive in this machine's apt sources")
    partial = root + ".partial"
    shutil.rmtree(partial, ignore_errors=True)
    os.makedirs(CACHE, exist_ok=True)
    r = subprocess.run(["debootstrap", "--variant=minbase", "--include=openssh-server", SUITE,
                        partial, uri], capture_output=True, text=True, timeout=1200)
    if r.returncode != 0:
        raise RuntimeError(f"debootstrap {SUITE} from {uri} failed:\n{r.stdout[-3000:]}"
                           f"{r.stderr[-3000:]}")
    with open(os.path.join(partial, "etc", "dlaunch-root"), "w") as f:
        f.write("debian-bullseye\n")
    os.rename(partial, root)
    return root


SSHD_LIBS = "/opt/sshd-libs"


def busybox_root(parent):
    """A root with a static busybox as every command and shell, and this
    machine's sshd with the libraries it loads kept apart in SSHD_LIBS.
    Returns the root and how to start its sshd: through the loader in
    SSHD_LIBS, without re-executing itself (-r), since /usr/sbin/sshd alone
    cannot start there."""
    root = os.path.join(parent, "busybox-root")
    for d in ("bin", "etc", "proc", "sys", "dev", "root", "tmp", "run/sshd", "usr/sbin"):
        os.makedirs(os.path.join(root, d), exist_ok=True)
    os.chmod(os.path.join(root, "tmp"), 0o1777)
    shutil.copy("/bin/busybox", os.path.join(root, "bin", "busybox"))
    subprocess.run(["chroot", root, "/bin/busybox", "--install", "-s", "/bin"], check=True)
    shutil.copy(sshd_harness.SSHD, os.path.join(root, "usr", "sbin", "sshd"))
    libs = os.path.join(root, SSHD_LIBS.lstrip("/"))
    os.makedirs(libs)
    ldd = subprocess.run(["ldd", sshd_harness.SSHD], capture_output=True, text=True, check=True)
    loader = None
    for path in re.findall(r"(/\S+)\s+\(0x", ldd.stdout):
        shutil.copy(path, os.path.join(libs, os.path.basename(path)))
        if "ld-linux" in path:
            loader = os.path.basename(path)
    with open(os.path.join(root, "etc", "passwd"), "w") as f:
        f.write("root:x:0:0:root:/root:/bin/sh\nsshd:x:100:65534::/run/sshd:/bin/false\n")
    with open(os.path.join(root, "etc", "group"), "w") as f:
        f.write("root:x:0:\nnogroup:x:65534:\n")
    with open(os.path.join(root, "etc", "dlaunch-root"), "w") as f:
        f.write("busybox\n")
    sshd = [f"{SSHD_LIBS}/{loader}", "--library-path", SSHD_LIBS, "/usr/sbin/sshd", "-r"]
    return root, sshd


def require_roots():
    if os.geteuid() != 0:
        print("SKIP: needs root (chroot, mount and network namespaces)")
        sys.exit(harness.SKIP)
    if os.environ.get("DLAUNCH_SANITIZE"):
        print("SKIP: sanitizer builds keep the agent dynamic; this tests the uploaded static one")
        sys.exit(harness.SKIP)
    sshd_harness.require_sshd()
    for tool in ("debootstrap", "unshare", "chroot"):
        if shutil.which(tool) is None:
            print(f"SKIP: {tool} missing (apt-get install debootstrap)")
            sys.exit(harness.SKIP)
    if not os.path.exists("/bin/busybox") or "INTERP" in subprocess.run(
            ["readelf", "-lW", "/bin/busybox"], capture_output=True, text=True).stdout:
        print("SKIP: no static /bin/busybox (apt-get install busybox-static)")
        sys.exit(harness.SKIP)
    if not sshd_harness.can_use_netns():
        print("SKIP: cannot make network namespaces")
        sys.exit(harness.SKIP)


class AgentOnOtherRoots(harness.DlaunchTestCase):
    @classmethod
    def setUpClass(cls):
        cls.roots_dir = __import__("tempfile").mkdtemp(prefix="dlaunch-roots-")
        cls.debian = debian_root()
        cls.busybox, busybox_sshd = busybox_root(cls.roots_dir)
        cls.hosts = sshd_harness.SshHosts(2, netns=True, roots=[cls.debian, cls.busybox],
                                          root_sshd=[None, busybox_sshd])
        cls.hosts.__enter__()
        cls.hosts.write_known_hosts()

    @classmethod
    def tearDownClass(cls):
        cls.hosts.close()
        # The Debian root stays cached; the uploaded agents and sshd's files go.
        for path in ("root/.cache", "etc/dlaunch-test"):
            shutil.rmtree(os.path.join(cls.debian, path), ignore_errors=True)
        shutil.rmtree(cls.roots_dir, ignore_errors=True)

    def env(self, **extra):
        env = self.hosts.env(DLAUNCH_STATE_DIR=self.state, **extra)
        env.pop("DLAUNCH_REMOTE_CACHE")  # each root's own ~/.cache/dlaunch
        return env

    def hosts_file(self, which):
        return self.hosts.hosts_file([2], hosts=[self.hosts.hosts[which]],
                                     name=f"hosts{which}.toml")

    def test_the_roots_are_what_they_claim(self):
        # Guards the test: the Debian root's libc is 2.31, and in the busybox
        # root no dynamically linked program can start (no loader where the
        # ELF files of this machine ask for it).
        libc = [p for p in os.listdir(os.path.join(self.debian, "lib", "x86_64-linux-gnu"))
                if p.startswith("libc-")]
        self.assertEqual(libc, ["libc-2.31.so"])
        for loader in ("lib64/ld-linux-x86-64.so.2", "lib/ld-linux-aarch64.so.1"):
            self.assertFalse(os.path.exists(os.path.join(self.busybox, loader)), loader)
        r = subprocess.run(["chroot", self.busybox, "/usr/sbin/sshd", "-V"], capture_output=True)
        self.assertNotEqual(r.returncode, 0)

    def run_job_on(self, which, label):
        job = self.job_name(f"root{which}")
        script = ('echo "rank $RANK in $(cat /etc/dlaunch-root)"; '
                  '[ "$RANK" = 1 ] && exit 3; exit 0')
        r = self.run_dlaunch(["-v", "--name", job, "--hosts", self.hosts_file(which), "--",
                              "sh", "-c", script], env=self.env(), timeout=180)
        self.assertEqual(r.returncode, 3, r.stderr)
        for rank in range(2):
            self.assertIn(f"rank {rank} in {label}", r.stdout, r.stderr)
        self.assertIn("rank 1", r.stderr)
        self.assertIn("exited with code 3", r.stderr)
        self.assertIn("uploaded the agent", r.stderr)
        self.assertNothingLeft(job)

    def test_a_job_on_debian_11(self):
        self.run_job_on(0, "debian-bullseye")

    def test_a_job_on_a_busybox_root(self):
        self.run_job_on(1, "busybox")

    def test_a_stopped_job_leaves_nothing(self):
        for which in range(2):
            job = self.job_name(f"stop{which}")
            p = self.start_dlaunch(["--name", job, "--hosts", self.hosts_file(which), "--",
                                    "sh", "-c", 'echo "up $RANK"; exec sleep 300'],
                                   env=self.env())
            self.assertTrue(
                harness.wait_for(lambda: len(harness.processes_with_marker(job)) >= 2, timeout=60),
                f"the ranks on host {which} did not start")
            p.send_signal(signal.SIGINT)
            p.communicate(timeout=60)
            self.assertNotEqual(p.returncode, 0)
            self.assertNothingLeft(job)
            self.assertEqual(harness.agents_in(self.hosts.hosts[which]["ns"]), [],
                             f"agents left on host {which}")


if __name__ == "__main__":
    require_roots()
    unittest.main(verbosity=2)
