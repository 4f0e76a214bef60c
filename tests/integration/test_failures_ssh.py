"""Failure paths over SSH hosts (network namespaces when root): whatever dies
or disconnects, the job stops everywhere and a scan of /proc (shared by every
namespace) finds no process carrying the job's DLAUNCH_JOB marker."""

import json
import os
import signal
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
import sshd_harness  # noqa: E402
from harness import STUBBORN_RANK, wait_for  # noqa: E402

PY = "/usr/bin/python3"


class SshFailureTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.hosts = sshd_harness.SshHosts(3)
        cls.hosts.__enter__()
        cls.hosts.write_known_hosts()
        cls.hosts_file = cls.hosts.hosts_file([1, 1, 1])

    @classmethod
    def tearDownClass(cls):
        cls.hosts.close()

    def setUp(self):
        self.job = f"sshfail-{os.getpid()}-{self._testMethodName[-20:]}"
        self.proc = None

    def tearDown(self):
        harness.end_job_process(self.proc, self.job)

    def start(self, rank_env=None, args=()):
        env = self.hosts.env()
        hosts_file = self.hosts_file
        if rank_env:  # remote ranks get their environment from the hosts file, not from us
            table = ", ".join(f'{k} = "{v}"' for k, v in rank_env.items())
            hosts_file = self.hosts.hosts_file([1, 1, 1], extra=f"[defaults]\nenv = {{ {table} }}\n\n",
                                               name="hosts-env.toml")
        cmd = [harness.DLAUNCH, "--hosts", hosts_file, "--name", self.job, "--grace", "2",
               "--heartbeat-timeout", "4", *args, "--", PY, "-c", STUBBORN_RANK]
        self.proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True)
        self.assertTrue(wait_for(lambda: len(harness.processes_with_marker(self.job)) >= 6, 60),
                        "ranks did not start")

    def finish(self):
        _, err = self.proc.communicate(timeout=120)
        return self.proc.returncode, err

    def assertNothingLeft(self, timeout=30):
        left = harness.wait_no_marker(self.job, timeout)
        self.assertEqual(left, [], f"processes of {self.job} still running: {left}")

    def test_kill_9_of_one_rank(self):
        self.start()
        rank = [p for p in harness.processes_with_marker(self.job)
                if harness.exe_name(p).startswith("python")][0]
        os.kill(rank, signal.SIGKILL)
        code, err = self.finish()
        self.assertEqual(code, 137, err)
        self.assertNothingLeft()

    def test_kill_9_of_an_agent(self):
        self.start()
        workers = harness.agent_workers_of(self.job)
        self.assertEqual(len(workers), 3)
        os.kill(workers[1], signal.SIGKILL)
        code, err = self.finish()
        self.assertNotEqual(code, 0)
        self.assertIn("lost the agent", err)
        self.assertNothingLeft()

    def test_a_stopped_agent_does_not_leave_its_ranks_running(self):
        # SIGSTOP on one host's agent: the coordinator declares the node dead
        # after the heartbeat timeout, and the ranks there must end too, while
        # the agent stays stopped (its guardian watches it).
        self.start()
        workers = harness.agent_workers_of(self.job)
        self.assertEqual(len(workers), 3)
        stopped = workers[1]
        os.kill(stopped, signal.SIGSTOP)
        try:
            code, err = self.finish()
            self.assertNotEqual(code, 0)
            self.assertIn("no message for 4 s", err)
            self.assertNothingLeft()
        finally:
            try:
                os.kill(stopped, signal.SIGKILL)
            except OSError:
                pass

    def test_kill_9_of_the_coordinator(self):
        self.start()
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        self.assertNothingLeft()
        # Its record says RUNNING; the reader sees the coordinator is gone.
        r = subprocess.run([harness.DLAUNCH, "get", self.job], capture_output=True, text=True,
                           env=self.hosts.env(), timeout=30)
        self.assertIn("status:     LOST", r.stdout)

    def test_detached_job_is_stopped_on_every_host(self):
        env = self.hosts.env()
        r = subprocess.run([harness.DLAUNCH, "--detach", "--hosts", self.hosts_file, "--name",
                            self.job, "--grace", "2", "--", PY, "-c", STUBBORN_RANK],
                           env=env, capture_output=True, text=True, timeout=60,
                           stdin=subprocess.DEVNULL)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.strip(), self.job)
        self.assertTrue(wait_for(lambda: len(harness.processes_with_marker(self.job)) >= 6, 60),
                        "ranks did not start")

        def record():
            out = subprocess.run([harness.DLAUNCH, "get", self.job, "--json"], env=env,
                                 capture_output=True, text=True, timeout=30).stdout
            return json.loads(out)
        self.assertTrue(wait_for(lambda: record()["status"] == "RUNNING", 30))
        job = record()
        self.assertEqual([n["host"] for n in job["nodes"]], ["h1", "h2", "h3"])
        self.assertEqual([n["first_rank"] for n in job["nodes"]], [0, 1, 2])
        self.assertTrue(all(n["agent_pid"] > 0 for n in job["nodes"]), job["nodes"])

        r = subprocess.run([harness.DLAUNCH, "stop", self.job], env=env, capture_output=True,
                           text=True, timeout=90)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNothingLeft()
        job = record()
        self.assertEqual(job["status"], "STOPPED")
        self.assertEqual(job["exit_code"], 143)

    def test_stubborn_rank_with_setsid_grandchild(self):
        self.start({"FAIL_RANK": "1", "FAIL_AFTER": "1"})
        code, err = self.finish()
        self.assertEqual(code, 4, err)
        self.assertIn("rank 1 on h2 exited with code 4", err)
        self.assertNothingLeft()

    def test_link_cut_mid_run(self):
        if not self.hosts.netns:
            self.skipTest(harness.netns_reason() or "no network namespaces")
        self.start()
        veth = f"dv{self.hosts.tag}h2"
        subprocess.run(["ip", "link", "set", veth, "down"], check=True)
        try:
            code, err = self.finish()
            self.assertEqual(code, 1, err)
            # Found by the missed heartbeats (--heartbeat-timeout 4), not by a
            # TCP timeout a minute or more later, which names another reason.
            self.assertIn(f"job {self.job} failed: lost the agent of node 1 (h2): no message for "
                          "4 s (peer silent or link down)\n", err)
            self.assertNothingLeft(timeout=30)  # h2's agent stops its ranks on its own
        finally:
            subprocess.run(["ip", "link", "set", veth, "up"], check=True)

    def test_restart_only_needed_once(self):
        script = ('echo "round $TORCHELASTIC_RESTART_COUNT"; '
                  'if [ "$TORCHELASTIC_RESTART_COUNT" = 0 ] && [ "$RANK" = 2 ]; then exit 5; fi')
        env = self.hosts.env()
        r = subprocess.run([harness.DLAUNCH, "--hosts", self.hosts_file, "--", "sh", "-c", script],
                           env=env, capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 5, r.stderr)
        r = subprocess.run([harness.DLAUNCH, "--hosts", self.hosts_file, "--max-restarts", "1",
                            "--", "sh", "-c", script], env=env, capture_output=True, text=True,
                           timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("[h3:2] round 1", r.stdout)


if __name__ == "__main__":
    harness.require_binaries()
    sshd_harness.require_sshd()
    harness.main(verbosity=2)
