"""The SSH transport's own corners, against real sshd servers: servers with
several host keys of which known_hosts holds one, ~/.ssh/config aliases, key
files that are missing or have a passphrase, a home directory mounted noexec,
a connection that drops mid-job, and eight hosts set up two at a time."""

import ctypes
import os
import random
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

SLEEPER = "import os, time; print('up', os.environ['RANK'], flush=True); time.sleep(300)"


def keygen(path, passphrase=""):
    sshd_harness.sh("ssh-keygen", "-q", "-t", "ed25519", "-N", passphrase, "-f", path)


def libssh2_version():
    """The libssh2 dlaunch links: rsa-sha2 host keys came with 1.11."""
    lib = ctypes.CDLL("libssh2.so.1")
    lib.libssh2_version.restype = ctypes.c_char_p
    return tuple(int(p) for p in lib.libssh2_version(0).decode().split(".")[:2])


class SeveralHostKeysTest(unittest.TestCase):
    """Debian's sshd has RSA, ECDSA and Ed25519 keys; known_hosts usually holds
    the one OpenSSH negotiated. Whichever it is, the host is known."""

    @classmethod
    def setUpClass(cls):
        cls.hosts = sshd_harness.SshHosts(2, key_types=("ed25519", "ecdsa", "rsa"))
        cls.hosts.__enter__()

    @classmethod
    def tearDownClass(cls):
        cls.hosts.close()

    def test_known_key_of_any_type_is_used(self):
        hosts_file = self.hosts.hosts_file([1, 1])
        for key_type in ("ed25519", "ecdsa", "rsa"):
            with self.subTest(key_type=key_type):
                self.hosts.write_known_hosts(key_type=key_type)
                r = self.hosts.dlaunch(["--hosts", hosts_file, "--", "true"])
                if key_type == "rsa" and libssh2_version() < (1, 11):
                    # libssh2 1.10 (Debian 12's) has no rsa-sha2 host keys and
                    # the server refuses SHA-1's ssh-rsa: the host shows its
                    # Ed25519 key. Refused, never accepted blindly, and said
                    # as such: a broken known_hosts lookup would say "unknown
                    # host key" instead.
                    self.assertEqual(r.returncode, 1, r.stderr)
                    self.assertIn("holds RSA host keys only for ", r.stderr)
                    self.assertNotIn("unknown host key", r.stderr)
                    continue
                self.assertEqual(r.returncode, 0, r.stderr)

    def test_accept_new_records_the_key_openssh_would(self):
        known = self.hosts.write_known_hosts(hosts=[])
        hosts_file = self.hosts.hosts_file([1, 1])
        r = self.hosts.dlaunch(["--hosts", hosts_file, "--accept-new-host-keys", "--", "true"])
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(known) as f:
            lines = f.read().splitlines()
        self.assertEqual(len(lines), 2)
        self.assertTrue(all(" ssh-ed25519 " in line for line in lines), lines)


class SshTransportTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.hosts = sshd_harness.SshHosts(3)
        cls.hosts.__enter__()

    @classmethod
    def tearDownClass(cls):
        cls.hosts.close()

    def setUp(self):
        self.hosts.write_known_hosts()
        self.job = f"sshtr-{os.getpid()}-{random.randint(0, 1 << 30)}"

    def tearDown(self):
        for pid in sshd_harness.processes_with_marker(self.job):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass

    def test_changed_key_below_a_bad_line_is_still_refused(self):
        # libssh2's own reader stops at a line it cannot parse; a changed key
        # hidden that way must not pass as new with --accept-new-host-keys.
        victim = self.hosts.hosts[2]
        wrong = os.path.join(self.hosts.tmp, "wrong_host_key")
        if not os.path.exists(wrong):
            keygen(wrong)
        with open(wrong + ".pub") as f:
            wrong_pub = " ".join(f.read().split()[:2])
        known = self.hosts.write_known_hosts(self.hosts.hosts[:2])
        with open(known, "a") as f:
            f.write("this line is not known_hosts syntax\n")
            f.write(f"{self.hosts.known_hosts_name(victim)} {wrong_pub}\n")
        r = self.hosts.dlaunch(["--hosts", self.hosts.hosts_file([1, 1, 1]),
                                 "--accept-new-host-keys", "--", "true"])
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("h3: HOST KEY CHANGED", r.stderr)
        self.assertIn(f"{known}:4", r.stderr)
        with open(known) as f:
            self.assertEqual(len(f.read().splitlines()), 4)  # nothing added

    def test_ssh_config_alias_gives_address_port_user_and_key(self):
        h = self.hosts.hosts[0]
        ssh_dir = os.path.join(self.hosts.tmp, "alias-home", ".ssh")
        os.makedirs(ssh_dir, exist_ok=True)
        key = os.path.join(ssh_dir, "cluster_key")
        shutil.copy(self.hosts.client_key, key)
        shutil.copy(os.path.join(self.hosts.home, ".ssh", "known_hosts"), ssh_dir)
        with open(os.path.join(ssh_dir, "config"), "w") as f:
            f.write(f"Host other\n  User nobody\nHost gpu? gpu-*  # the cluster\n"
                    f"  HostName {h['address']}\n  Port {h['port']}\n  User root\n"
                    f"  IdentityFile ~/.ssh/cluster_key\nHost *\n  User nobody\n  Port 1\n")
        hosts_file = os.path.join(self.hosts.tmp, "alias.toml")
        with open(hosts_file, "w") as f:
            f.write('[[host]]\nname = "g"\naddress = "gpu7"\nslots = 2\ntransport = "ssh"\n')
        r = self.hosts.dlaunch(["--hosts", hosts_file, "--", "true"],
                    HOME=os.path.dirname(ssh_dir))
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_missing_and_passphrase_keys_are_named(self):
        home = os.path.join(self.hosts.tmp, "locked-home")
        ssh_dir = os.path.join(home, ".ssh")
        os.makedirs(ssh_dir, exist_ok=True)
        shutil.copy(os.path.join(self.hosts.home, ".ssh", "known_hosts"), ssh_dir)
        locked = os.path.join(ssh_dir, "id_ed25519")
        if not os.path.exists(locked):
            keygen(locked, passphrase="not typed by anyone")
            with open(locked + ".pub") as pub, open(self.hosts.authorized, "a") as auth:
                auth.write(pub.read())  # the host would take it: only the passphrase is missing
        hosts_file = self.hosts.hosts_file([1])
        with open(hosts_file, "a") as f:
            f.write('identity = "~/.ssh/deploy_key"\n')
        r = self.hosts.dlaunch(["--hosts", hosts_file, "--", "true"], HOME=home)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("h1: authentication as root@", r.stderr)
        self.assertIn(f"{locked} (cannot be read: passphrase-protected? load it into ssh-agent)",
                      r.stderr)
        self.assertIn("no such key file: " + os.path.join(ssh_dir, "deploy_key"), r.stderr)
        self.assertIn("server accepts: publickey", r.stderr)

    def test_noexec_cache_falls_back_to_tmp_with_a_warning(self):
        if os.geteuid() != 0:
            self.skipTest("not root: mounting a noexec file system needs root")
        sshd_harness.check_noexec_cache_fallback(self, self.hosts)

    def test_dropped_connection_ends_the_job_naming_the_host(self):
        victim = self.hosts.hosts[1]
        proc = subprocess.Popen(
            [harness.DLAUNCH, "--hosts", self.hosts.hosts_file([1, 1, 1]), "--name", self.job,
             "--grace", "2", "--", "/usr/bin/python3", "-c", SLEEPER],
            env=self.hosts.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            self.assertTrue(harness.wait_for(
                lambda: len(sshd_harness.processes_with_marker(self.job)) >= 3, 60))
            for pid in self.hosts.session_pids(victim):
                os.kill(pid, signal.SIGKILL)
            # The ranks sleep 300 s: only a stop ends the job within the 60 s
            # waited here (a bound that only ends a hang).
            _, err = proc.communicate(timeout=60)
            self.assertNotEqual(proc.returncode, 0)
            # The job ended on the closed SSH connection to h2, named in the
            # failure itself (other lines name h2 too), not on the heartbeat
            # timeout that would follow 15 s later ("no message for 15 s").
            self.assertRegex(
                err, rf"job {re.escape(self.job)} failed: h2: lost the SSH connection to "
                     rf"{re.escape(victim['address'])}:{victim['port']} \(.*\); the agent there "
                     r"stops its ranks when it notices\n")
            self.assertNotIn("no message for", err)
            self.assertTrue(harness.wait_for(
                lambda: not sshd_harness.processes_with_marker(self.job), 30),
                "ranks left behind")
        finally:
            harness.end_job_process(proc, self.job)


class ChattyShellTest(unittest.TestCase):
    def test_shell_startup_output_does_not_confuse_the_start(self):
        # bash sources $BASH_ENV for the command sshd runs, as it would ~/.bashrc.
        tmp = tempfile.mkdtemp(prefix="dlaunch-chatty-")
        try:
            rc = os.path.join(tmp, "bashrc")
            with open(rc, "w") as f:
                f.write("echo 'Welcome to the cluster'\necho 'quota: 93%' >&2\n")
            with sshd_harness.SshHosts(2, sshd_extra=f"SetEnv BASH_ENV={rc}\n") as hosts:
                hosts.write_known_hosts()
                r = hosts.dlaunch(["--hosts", hosts.hosts_file([1, 1]), "--", "true"])
                self.assertEqual(r.returncode, 0, r.stderr)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


class NoChecksumToolTest(unittest.TestCase):
    def test_a_host_without_sha256sum_gets_the_agent_over_sftp(self):
        # The upload streams over an exec channel whose script checks the
        # SHA-256 on the host; a host with none of sha256sum, shasum and openssl
        # on its PATH gets it over SFTP instead, and the job runs.
        tmp = tempfile.mkdtemp(prefix="dlaunch-nosum-")
        try:
            tools = os.path.join(tmp, "bin")
            os.makedirs(tools)
            for tool in ("sh", "cat", "mkdir", "chmod", "mv", "rm", "uname", "id", "true",
                         "printf", "test"):
                found = shutil.which(tool)
                if found:
                    os.symlink(found, os.path.join(tools, tool))
            with sshd_harness.SshHosts(1, sshd_extra=f"SetEnv PATH={tools}\n") as hosts:
                hosts.write_known_hosts()
                r = hosts.dlaunch(["-v", "--hosts", hosts.hosts_file([1]), "--", "true"])
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertIn("uploaded the agent", r.stderr)
                self.assertIn("over SFTP (the exec channel's: h1: cannot verify the upload", r.stderr)
                self.assertIn("none of sha256sum, shasum or openssl is installed", r.stderr)
                cached = os.listdir(hosts.remote_cache)
                self.assertEqual(len(cached), 1, cached)  # no temporary file left
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


class CutUploadTest(unittest.TestCase):
    def test_an_upload_cut_short_is_said_and_the_cache_filled(self):
        # The first upload's `cat` on the host takes 1 MB of the agent, then
        # it and the upload's script die, as when a connection drops mid-way:
        # the partial file stays. It used to be reported as "not writable",
        # the agent went to /tmp instead, and every later job ran it from
        # there with that warning.
        tmp = tempfile.mkdtemp(prefix="dlaunch-cut-")
        fallback = f"/tmp/dlaunch-{os.getuid()}"
        before = set(os.listdir(fallback)) if os.path.isdir(fallback) else None
        try:
            tools = os.path.join(tmp, "bin")
            os.makedirs(tools)
            once = os.path.join(tmp, "cut-once")
            with open(os.path.join(tools, "cat"), "w") as f:
                f.write(f"#!/bin/sh\nif mkdir {once} 2>/dev/null; then\n"
                        "  head -c 1000000; kill -9 $PPID $$\nfi\n"
                        f"exec {shutil.which('cat')} \"$@\"\n")
            os.chmod(os.path.join(tools, "cat"), 0o755)
            path = f"{tools}:/usr/local/bin:/usr/bin:/bin"
            with sshd_harness.SshHosts(1, sshd_extra=f"SetEnv PATH={path}\n") as hosts:
                hosts.write_known_hosts()
                r = hosts.dlaunch(["--hosts", hosts.hosts_file([1]), "--", "true"])
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertTrue(os.path.isdir(once), "the upload was not cut")
                self.assertRegex(r.stderr, r"h1: the upload of the agent to \S+/agent-[0-9a-f]{64} "
                                           r"was cut short after \d+ of \d+ bytes.*; uploading it "
                                           r"again\n")
                self.assertNotIn("not writable", r.stderr)
                cached = os.listdir(hosts.remote_cache)
                self.assertEqual(len(cached), 1, cached)  # the agent, no partial file
                self.assertRegex(cached[0], r"^agent-[0-9a-f]{64}$")
                again = hosts.dlaunch(["--hosts", hosts.hosts_file([1]), "--", "true"])
                self.assertEqual(again.returncode, 0, again.stderr)
                self.assertNotIn("warning", again.stderr)
                # A host poisoned so by an earlier version (its agent in /tmp,
                # none in the cache) gets its cache filled, and no warning.
                os.makedirs(fallback, mode=0o700, exist_ok=True)
                shutil.move(os.path.join(hosts.remote_cache, cached[0]),
                            os.path.join(fallback, cached[0]))
                healed = hosts.dlaunch(["--hosts", hosts.hosts_file([1]), "--", "true"])
                self.assertEqual(healed.returncode, 0, healed.stderr)
                self.assertNotIn("warning", healed.stderr)
                self.assertEqual(os.listdir(hosts.remote_cache), cached)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
            if before is not None and os.path.isdir(fallback):
                for name in set(os.listdir(fallback)) - before:
                    os.remove(os.path.join(fallback, name))
            elif before is None:
                shutil.rmtree(fallback, ignore_errors=True)


class ManyHostsTest(unittest.TestCase):
    def test_eight_hosts_two_connections_at_a_time(self):
        with sshd_harness.SshHosts(8) as hosts:
            hosts.write_known_hosts()
            out = os.path.join(hosts.tmp, "out")
            os.makedirs(out)
            r = hosts.dlaunch(["--hosts", hosts.hosts_file([2] * 8), "--ssh-parallel", "2", "--",
                                "sh", "-c", f'touch "{out}/$RANK-$DLAUNCH_HOST"'])
            self.assertEqual(r.returncode, 0, r.stderr)
            want = sorted(f"{rank}-h{rank // 2 + 1}" for rank in range(16))
            self.assertEqual(sorted(os.listdir(out)), want)


if __name__ == "__main__":
    harness.require_binaries()
    sshd_harness.require_sshd()
    if not sshd_harness.can_use_netns():
        print("note: not root or no `ip netns`: sshd servers listen on loopback ports instead")
    harness.main(verbosity=2)
