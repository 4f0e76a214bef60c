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

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
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
        raise unittest.SkipTest("no Debian archive: none in this machine's apt sources "
                                "(/etc/apt/sources.list, /etc/apt/sources.list.d/)")
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


def busybox_root(parent, name="busybox-root"):
    """A root with a static busybox as every command and shell, and this
    machine's sshd with the libraries it loads kept apart in SSHD_LIBS.
    Returns the root and how to start its sshd: through the loader in
    SSHD_LIBS, without re-executing itself (-r), since /usr/sbin/sshd alone
    cannot start there."""
    root = os.path.join(parent, name)
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
        harness.skip_file("not root: chroot, mounts and network namespaces need root")
    if os.environ.get("DLAUNCH_SANITIZE"):
        harness.skip_file("sanitizer build: its agent is dynamic; this tests the uploaded "
                          "static one (the normal build's)")
    sshd_harness.require_sshd()
    for tool, package in (("debootstrap", "debootstrap"), ("unshare", "util-linux"),
                          ("chroot", "coreutils")):
        if shutil.which(tool) is None:
            harness.skip_file(f"missing: {tool} ({package})")
    if not os.path.exists("/bin/busybox") or "INTERP" in subprocess.run(
            ["readelf", "-lW", "/bin/busybox"], capture_output=True, text=True).stdout:
        harness.skip_file("missing: a static /bin/busybox (busybox-static)")
    why = harness.netns_reason(honour_opt_out=False)
    if why:
        harness.skip_file(why)


class RootsTestCase(harness.DlaunchTestCase):
    """Four SSH hosts, each in a root: Debian 11, busybox, and two more
    Debian 11 hosts whose `uname` (a script bound over the root's, in that
    host's mount namespace only) says aarch64 and riscv64."""

    @classmethod
    def setUpClass(cls):
        cls.roots_dir = tempfile.mkdtemp(prefix="dlaunch-roots-")
        cls.debian = debian_root()
        cls.busybox, busybox_sshd = busybox_root(cls.roots_dir)
        binds = [None, None]
        for machine in ("aarch64", "riscv64"):
            fake = os.path.join(cls.roots_dir, f"uname-{machine}")
            with open(fake, "w") as f:
                f.write(f"#!/bin/sh\necho {machine}\n")
            os.chmod(fake, 0o755)
            binds.append([(fake, "/usr/bin/uname")])
        cls.hosts = sshd_harness.SshHosts(
            4, netns=True, roots=[cls.debian, cls.busybox, cls.debian, cls.debian],
            root_sshd=[None, busybox_sshd, None, None], root_binds=binds)
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


class AgentOnOtherRoots(RootsTestCase):

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
        # Rank 1's failure stops rank 0: it waits a moment so that rank 0 has
        # said where it runs first, also on a loaded machine.
        script = ('echo "rank $RANK in $(cat /etc/dlaunch-root)"; '
                  '[ "$RANK" = 1 ] && sleep 3 && exit 3; exit 0')
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

    def test_check_names_each_hosts_libc_and_the_agent_used(self):
        hosts_file = self.hosts.hosts_file([1, 1], name="both.toml", hosts=self.hosts.hosts[:2])
        r = self.run_dlaunch(["check", "--hosts", hosts_file, "--json"], env=self.env(),
                             timeout=180)
        doc = json.loads(r.stdout)
        rows = {row["name"]: row for row in doc["hosts"]}
        debian, busybox = rows["h1"], rows["h2"]
        self.assertEqual(debian["libc"], "glibc 2.31", debian)
        self.assertEqual(busybox["libc"], "", busybox)
        for row in (debian, busybox):
            self.assertTrue(row["up"], row)
            self.assertEqual(row["arch"], os.uname().machine, row)
            self.assertEqual(row["agent_arch"], row["arch"], row)
        self.assertIn("Debian GNU/Linux 11", debian["os"])
        r = self.run_dlaunch(["check", "--hosts", hosts_file], env=self.env(), timeout=180)
        self.assertIn("glibc 2.31", r.stdout)

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


class AArch64Agent(unittest.TestCase):
    """The cross-built aarch64 agent (-DDLAUNCH_AGENT_ARCHES="x86_64;aarch64")."""

    def setUp(self):
        self.agent = os.path.join(harness.BIN_DIR, "dlaunch-agent-aarch64")
        if not os.path.exists(self.agent):
            self.skipTest(f"not built: {self.agent} (configure with "
                          '-DDLAUNCH_AGENT_ARCHES="x86_64;aarch64")')

    def test_it_is_a_static_aarch64_binary(self):
        header = subprocess.run(["readelf", "-hlW", self.agent], capture_output=True, text=True,
                                check=True).stdout
        self.assertIn("AArch64", header)
        self.assertNotIn("INTERP", header)
        helper = os.path.join(harness.BIN_DIR, "..", "agent-aarch64", "bin", "dlaunch-gpu-helper")
        syms = subprocess.run(["readelf", "-W", "--dyn-syms", helper], capture_output=True,
                              text=True, check=True).stdout
        versions = {tuple(map(int, v.split("."))) for v in re.findall(r"@GLIBC_([0-9.]+)", syms)}
        self.assertTrue(versions)
        self.assertLessEqual(max(versions), (2, 17), syms)

    def test_it_runs_under_qemu(self):
        if shutil.which("qemu-aarch64-static") is None:
            self.skipTest("missing: qemu-aarch64-static (qemu-user-static)")
        r = subprocess.run(["qemu-aarch64-static", self.agent, "--version"], capture_output=True,
                           text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(r.stdout.startswith("dlaunch-agent "), r.stdout)


BINFMT = "/proc/sys/fs/binfmt_misc"
BINFMT_NAME = f"dlaunch-test-aarch64-{os.getpid()}"
# An aarch64 ELF executable: its magic and mask, as Debian's qemu-user-static registers it.
AARCH64_MAGIC = (r"\x7f\x45\x4c\x46\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00"
                 r"\x02\x00\xb7\x00")
AARCH64_MASK = (r"\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff"
                r"\xfe\xff\xff\xff")


class HostsOfOtherArchitectures(RootsTestCase):
    """Hosts whose `uname -m` is not this machine's: one says aarch64 and runs
    aarch64 programs through qemu (a binfmt_misc entry with the F flag, made
    for this test and removed after it), so the coordinator must pick the
    aarch64 agent and it must work there; one says riscv64, for which there is
    no agent."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.mounted_binfmt = False
        cls.registered = False
        qemu = shutil.which("qemu-aarch64-static")
        agent = os.path.join(harness.BIN_DIR, "dlaunch-agent-aarch64")
        # Why aarch64 programs cannot run here, for the test that needs them.
        cls.no_aarch64 = None
        if qemu is None:
            cls.no_aarch64 = "missing: qemu-aarch64-static (qemu-user-static)"
            return
        if not os.path.exists(agent):
            cls.no_aarch64 = (f"not built: {agent} (configure with "
                              '-DDLAUNCH_AGENT_ARCHES="x86_64;aarch64")')
            return
        if not os.path.exists(os.path.join(BINFMT, "register")):
            mounted = subprocess.run(["mount", "-t", "binfmt_misc", "binfmt_misc", BINFMT],
                                     capture_output=True, text=True)
            cls.mounted_binfmt = mounted.returncode == 0
            if not cls.mounted_binfmt:
                cls.no_aarch64 = (f"no mounts: mount -t binfmt_misc on {BINFMT} failed: "
                                  f"{mounted.stderr.strip()}")
                return
        try:
            with open(os.path.join(BINFMT, "register"), "w") as f:
                f.write(f":{BINFMT_NAME}:M::{AARCH64_MAGIC}:{AARCH64_MASK}:{qemu}:F")
            cls.registered = True
        except OSError as e:
            cls.no_aarch64 = f"binfmt_misc: registering {qemu} for aarch64 failed: {e}"

    @classmethod
    def tearDownClass(cls):
        if cls.registered:
            with open(os.path.join(BINFMT, BINFMT_NAME), "w") as f:
                f.write("-1")
        if cls.mounted_binfmt:
            subprocess.run(["umount", BINFMT], capture_output=True)
        super().tearDownClass()

    def test_an_aarch64_host_gets_the_aarch64_agent(self):
        if not self.registered:
            self.skipTest(self.no_aarch64)
        job = self.job_name("arm")
        r = self.run_dlaunch(["-v", "--name", job, "--hosts", self.hosts_file(2), "--",
                              "sh", "-c", 'echo "rank $RANK"; [ "$RANK" = 1 ] && exit 3; exit 0'],
                             env=self.env(), timeout=300)
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("uploaded the aarch64 agent", r.stderr)
        for rank in range(2):
            self.assertIn(f"rank {rank}", r.stdout, r.stderr)
        self.assertNothingLeft(job)
        hosts_file = self.hosts.hosts_file([1], name="arm.toml", hosts=[self.hosts.hosts[2]])
        r = self.run_dlaunch(["check", "--hosts", hosts_file, "--json"], env=self.env(),
                             timeout=300)
        row = json.loads(r.stdout)["hosts"][0]
        self.assertEqual(row["agent_arch"], "aarch64", row)

    def test_a_host_of_an_architecture_without_an_agent_is_named(self):
        r = self.run_dlaunch(["--hosts", self.hosts_file(3), "--", "true"], env=self.env(),
                             timeout=120)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("h4: the host is riscv64, and this dlaunch carries agents for", r.stderr)
        self.assertIn("x86_64", r.stderr)


if __name__ == "__main__":
    require_roots()
    harness.main(verbosity=2)
