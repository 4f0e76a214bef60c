"""Failure paths on one machine (local agents): whatever dies, nothing of the
job is left running afterwards. Each test ends with a /proc scan for the job's
DLAUNCH_JOB marker."""

import os
import signal
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import DlaunchTestCase, STUBBORN_RANK, wait_for  # noqa: E402


class LocalFailureTest(DlaunchTestCase):
    def start_stubborn(self, job, nranks=2, extra_env=None, extra_args=()):
        env = self.env(**(extra_env or {}))
        p = self.start_dlaunch(["-n", str(nranks), "--name", job, "--grace", "2",
                                *extra_args, "--", sys.executable, "-c", STUBBORN_RANK], env=env)
        # every rank and its grandchild are up
        self.assertTrue(wait_for(lambda: len(harness.processes_with_marker(job)) >= 2 * nranks),
                        "ranks did not start")
        return p

    def agent_pids(self, dlaunch_pid):
        guardian = [c for c in harness.children_of(dlaunch_pid)
                    if harness.exe_name(c) == "dlaunch-agent"]
        self.assertEqual(len(guardian), 1)
        workers = [c for c in harness.children_of(guardian[0])
                   if harness.exe_name(c) == "dlaunch-agent"]
        self.assertEqual(len(workers), 1)
        return guardian[0], workers[0]

    def test_stubborn_rank_and_setsid_grandchild_are_killed_after_failure(self):
        job = self.job_name("stubborn")
        p = self.start_stubborn(job, 3, {"FAIL_RANK": "1", "FAIL_AFTER": "1"})
        _, err = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 4, err)
        self.assertIn("rank 1 on localhost exited with code 4", err)
        self.assertNothingLeft(job)

    def test_kill_9_of_one_rank(self):
        job = self.job_name("killrank")
        p = self.start_stubborn(job)
        rank_pids = [pid for pid in harness.processes_with_marker(job)
                     if harness.exe_name(pid).startswith("python")]
        os.kill(rank_pids[0], signal.SIGKILL)
        _, err = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 137, err)
        self.assertIn("SIGKILL", err)
        self.assertNothingLeft(job)

    def test_kill_9_of_the_agent_worker(self):
        job = self.job_name("killworker")
        p = self.start_stubborn(job)
        _, worker = self.agent_pids(p.pid)
        os.kill(worker, signal.SIGKILL)
        _, err = p.communicate(timeout=60)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("lost the agent of node 0 (localhost)", err)
        self.assertNothingLeft(job)

    def test_kill_9_of_the_agent_guardian(self):
        job = self.job_name("killguardian")
        p = self.start_stubborn(job)
        guardian, _ = self.agent_pids(p.pid)
        os.kill(guardian, signal.SIGKILL)
        p.communicate(timeout=60)
        self.assertNotEqual(p.returncode, 0)
        self.assertNothingLeft(job)

    def test_kill_9_of_the_coordinator(self):
        job = self.job_name("killcoord")
        p = self.start_stubborn(job)
        os.kill(p.pid, signal.SIGKILL)
        p.wait()
        # agents see their stdin close, stop ranks within --grace, then sweep
        self.assertNothingLeft(job, timeout=20)

    def test_frozen_agent_is_declared_dead_after_heartbeat_timeout(self):
        job = self.job_name("frozenagent")
        p = self.start_stubborn(job, extra_args=("--heartbeat-timeout", "3"))
        _, worker = self.agent_pids(p.pid)
        os.kill(worker, signal.SIGSTOP)
        _, err = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 1, err)
        self.assertIn("no message for 3 s", err)
        self.assertNothingLeft(job)

    def test_frozen_coordinator_makes_agents_stop_their_ranks(self):
        job = self.job_name("frozencoord")
        p = self.start_stubborn(job, extra_args=("--heartbeat-timeout", "3"))
        os.kill(p.pid, signal.SIGSTOP)
        try:
            self.assertNothingLeft(job, timeout=30)
        finally:
            os.kill(p.pid, signal.SIGKILL)

    def test_sigterm_exits_143_and_cleans_up(self):
        job = self.job_name("term")
        p = self.start_stubborn(job)
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 143, err)
        self.assertNothingLeft(job)

    def test_second_ctrl_c_kills_at_once(self):
        job = self.job_name("twice")
        # The ranks ignore SIGTERM and the grace is an hour: only the second
        # SIGINT's kill ends them within the 60 s the test waits (a bound that
        # only ends a hang), and dlaunch says which SIGINT it acted on.
        err_path = os.path.join(self.tmp, "stderr")
        p = self.start_dlaunch(["-n", "2", "--name", job, "--grace", "3600", "--",
                                sys.executable, "-c", STUBBORN_RANK],
                               stdout=subprocess.DEVNULL, stderr=harness.open_output(self, "stderr"))
        try:
            self.assertTrue(wait_for(lambda: len(harness.processes_with_marker(job)) >= 4))
            p.send_signal(signal.SIGINT)
            # The second once the first was taken (not two at once, which may merge).
            self.assertIsNotNone(harness.wait_for_text(
                err_path, "received SIGINT: stopping all ranks (again to kill them now)\n", 60))
            p.send_signal(signal.SIGINT)
            p.wait(timeout=60)
            with open(err_path) as f:
                err = f.read()
            self.assertEqual(p.returncode, 130, err)
            self.assertIn("received SIGINT again: killing all ranks now\n", err)
            self.assertNothingLeft(job)
        finally:
            harness.kill_marker(job)  # else, on a failure, the hour's grace outlasts the test

    def test_restart_when_a_rank_fails_at_once_repeatedly(self):
        # Regression: a SIGTERM reaching a rank between fork and exec ran the
        # agent's own handler, and the agent stopped itself mid-restart.
        hosts = self.write("three.toml", "".join(
            f'[[host]]\nname = "n{i}"\naddress = "127.0.0.1"\n' for i in range(3)))
        script = ('echo "round $TORCHELASTIC_RESTART_COUNT"; '
                  'if [ "$TORCHELASTIC_RESTART_COUNT" = 0 ] && [ "$RANK" = 2 ]; then exit 5; fi')
        for attempt in range(15):
            r = self.run_dlaunch(["--hosts", hosts, "--max-restarts", "1", "--", "sh", "-c", script],
                                 timeout=60)
            self.assertEqual(r.returncode, 0, f"attempt {attempt}: {r.stderr}")

    def test_restart_on_failure(self):
        # Rank 1 fails round 0 only once rank 0 has said its line (MARK_DIR):
        # the failure stops rank 0, which could otherwise go before printing.
        script = ('echo "round $TORCHELASTIC_RESTART_COUNT"; '
                  'touch "$MARK_DIR/printed-$TORCHELASTIC_RESTART_COUNT-$RANK"; '
                  'if [ "$TORCHELASTIC_RESTART_COUNT" = 0 ] && [ "$RANK" = 1 ]; then '
                  'while [ ! -e "$MARK_DIR/printed-0-0" ]; do sleep 0.05; done; exit 5; fi')
        marks = [os.path.join(self.tmp, f"marks-{i}") for i in (1, 2)]
        for d in marks:
            os.mkdir(d)
        r = self.run_dlaunch(["-n", "2", "--", "sh", "-c", script],
                             env=self.env(MARK_DIR=marks[0]))
        self.assertEqual(r.returncode, 5, r.stderr)
        job = self.job_name("restart")
        r = self.run_dlaunch(["-n", "2", "--max-restarts", "1", "--name", job, "--", "sh", "-c",
                              script], env=self.env(MARK_DIR=marks[1]))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("[0] round 1", r.stdout)
        self.assertIn("[1] round 1", r.stdout)
        self.assertIn("restarting all ranks (restart 1 of 1)", r.stderr)
        # Each round's log holds exactly what that round's process wrote.
        for rank in (0, 1):
            for round_, name in ((0, f"rank-{rank}.log"), (1, f"rank-{rank}.1.log")):
                with open(os.path.join(self.state, job, name)) as f:
                    self.assertEqual(f.read(), f"round {round_}\n", name)
        r = subprocess.run([harness.DLAUNCH, "logs", job, "-r", "1"], capture_output=True,
                           text=True, env=self.env(), timeout=30)
        self.assertEqual(r.stdout, "round 0\nround 1\n")
        self.assertIn(f"rank 1, restart 1: {os.path.join(self.state, job, 'rank-1.1.log')}",
                      r.stderr)
        r = self.run_dlaunch(["logs", job, "--all-ranks", "-t", "5"])
        self.assertEqual(sorted(r.stdout.splitlines()), ["[0] round 1", "[1] round 1"])


if __name__ == "__main__":
    harness.require_binaries()
    harness.main(verbosity=2)
