"""Hosts whose sshd has no `Subsystem sftp` line (hardened images): the agent
goes up over an exec channel instead, lands in the same cache, and a second
run finds it there."""

import hashlib
import os
import shutil
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
import sshd_harness  # noqa: E402

RANK = "import os; print('rank', os.environ['RANK'], 'of', os.environ['WORLD_SIZE'], flush=True)"


class NoSftpTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.hosts = sshd_harness.SshHosts(2, sftp=False)
        cls.hosts.__enter__()

    @classmethod
    def tearDownClass(cls):
        cls.hosts.close()

    def setUp(self):
        self.hosts.write_known_hosts()
        shutil.rmtree(self.hosts.remote_cache, ignore_errors=True)
        # The hosts share this machine's /tmp: a copy another test left in the
        # /tmp fallback would be started instead of uploading (ctest runs the
        # tests that use the fallback one at a time: RESOURCE_LOCK).
        with open(os.path.join(harness.BIN_DIR, "dlaunch-agent"), "rb") as f:
            sha = hashlib.sha256(f.read()).hexdigest()
        try:
            os.remove(f"/tmp/dlaunch-{os.getuid()}/agent-{sha}")
        except FileNotFoundError:
            pass

    def test_the_server_really_refuses_sftp(self):
        # Guards the test itself: OpenSSH's sftp client must fail against these hosts.
        if shutil.which("sftp") is None:
            self.skipTest("missing: sftp (openssh-client)")
        h = self.hosts.hosts[0]
        known = self.hosts.write_known_hosts()
        r = subprocess.run(["sftp", "-b", "-", "-P", str(h["port"]), "-i", self.hosts.client_key,
                            "-o", f"UserKnownHostsFile={known}", "-o", "BatchMode=yes",
                            f"root@{h['address']}"], input="pwd\n", capture_output=True,
                           text=True, timeout=30)
        self.assertNotEqual(r.returncode, 0, r.stdout)

    def test_job_runs_and_the_agent_is_cached(self):
        hosts_file = self.hosts.hosts_file([1, 2])
        r = self.hosts.dlaunch(["-v", "--hosts", hosts_file, "--", "/usr/bin/python3", "-c", RANK])
        self.assertEqual(r.returncode, 0, r.stderr)
        for rank in range(3):
            self.assertIn(f"rank {rank} of 3", r.stdout + r.stderr)
        self.assertNotIn("SFTP is not available", r.stderr)
        # Both "hosts" share this machine's cache directory: one may find the
        # copy the other has just put there.
        uploads = r.stderr.count("uploaded the agent")
        self.assertGreaterEqual(uploads, 1, r.stderr)
        self.assertEqual(r.stderr.count("over an exec channel"), uploads, r.stderr)
        self.assertEqual(uploads + r.stderr.count("agent already on host"), 2, r.stderr)
        cached = os.listdir(self.hosts.remote_cache)
        self.assertEqual(len(cached), 1, cached)  # no temporary file left
        agent = os.path.join(self.hosts.remote_cache, cached[0])
        with open(os.path.join(harness.BIN_DIR, "dlaunch-agent"), "rb") as f:
            self.assertEqual(cached[0], "agent-" + hashlib.sha256(f.read()).hexdigest())
        self.assertEqual(os.stat(agent).st_mode & 0o777, 0o755)

        r = self.hosts.dlaunch(["-v", "--hosts", hosts_file, "--", "true"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stderr.count("uploaded the agent"), 0, r.stderr)
        self.assertEqual(r.stderr.count("agent already on host"), 2, r.stderr)
        self.assertEqual(os.listdir(self.hosts.remote_cache), cached)

    def test_noexec_cache_falls_back_to_tmp(self):
        if os.geteuid() != 0 or not self.hosts.netns:
            self.skipTest(f"{harness.netns_reason() or 'no network namespaces'} (a noexec "
                          "mount in the host's namespace)")
        sshd_harness.check_noexec_cache_fallback(self, self.hosts)


if __name__ == "__main__":
    harness.require_binaries()
    sshd_harness.require_sshd()
    harness.main(verbosity=2)
