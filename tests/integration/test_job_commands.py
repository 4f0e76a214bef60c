"""Arena-style job commands over the records real jobs leave behind:
list, get, logs (-t, -r, -f), stop, top."""

import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import DlaunchTestCase, wait_for  # noqa: E402


class JobCommandsTest(DlaunchTestCase):
    def test_list_get_and_logs(self):
        ok, bad = self.job_name("ok"), self.job_name("bad")
        self.assertEqual(self.run_dlaunch(["-n", "2", "--name", ok, "--", "sh", "-c",
                                           'for i in 1 2 3; do echo "r$RANK l$i"; done']).returncode, 0)
        self.assertEqual(self.run_dlaunch(["-n", "1", "--name", bad, "--", "sh", "-c",
                                           "echo boom; exit 9"]).returncode, 9)
        r = self.run_dlaunch(["list"])
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.splitlines()
        self.assertEqual(lines[0].split(),
                         ["NAME", "STATUS", "HOSTS", "RANKS", "RESTARTS", "AGE", "DURATION"])
        rows = {line.split()[0]: line.split() for line in lines[1:]}
        self.assertEqual(rows[ok][1:4], ["SUCCEEDED", "1", "2"])
        self.assertEqual(rows[bad][1:4], ["FAILED", "1", "1"])
        self.assertLess(lines.index(next(l for l in lines if l.startswith(bad))),
                        lines.index(next(l for l in lines if l.startswith(ok))),
                        "newest first")
        r = self.run_dlaunch(["get", bad])
        self.assertIn("FAILED (exit code 9)", r.stdout)
        self.assertIn("root cause: rank 0", r.stdout)
        self.assertIn("| boom", r.stdout)
        r = self.run_dlaunch(["logs", ok, "--all-ranks", "-t", "1"])
        self.assertEqual(r.stdout.splitlines(), ["[0] r0 l3", "[1] r1 l3"])
        r = self.run_dlaunch(["logs", ok, "-t", "2"])  # rank 0 by default
        self.assertEqual(r.stdout, "r0 l2\nr0 l3\n")
        r = self.run_dlaunch(["logs", ok, "--rank", "1"])
        self.assertEqual(r.stdout, "r1 l1\nr1 l2\nr1 l3\n")
        r = self.run_dlaunch(["logs", "no-such-job"])
        self.assertEqual(r.returncode, 1)
        self.assertIn("no job named 'no-such-job'", r.stderr)

    def test_follow_top_and_stop_a_running_job(self):
        job = self.job_name("live")
        p = self.start_dlaunch(["-n", "2", "--name", job, "--", "sh", "-c",
                                'i=0; while true; do i=$((i+1)); echo "tick $i"; sleep 0.1; done'])
        self.assertTrue(wait_for(lambda: len(harness.processes_with_marker(job)) >= 2))
        follower = self.start_dlaunch(["logs", job, "-f", "--rank", "0"])
        r = self.run_dlaunch(["top", "--interval", "0.2"])
        self.assertIn(job, r.stdout)
        r = self.run_dlaunch(["list"])
        self.assertIn("RUNNING", [l.split()[1] for l in r.stdout.splitlines() if l.startswith(job)])
        time.sleep(0.5)
        r = self.run_dlaunch(["stop", job])
        self.assertEqual(r.returncode, 0, r.stderr)
        p.communicate(timeout=60)
        self.assertEqual(p.returncode, 143)
        out, _ = follower.communicate(timeout=30)  # -f ends when the job does
        self.assertIn("tick 3", out)
        self.assertNothingLeft(job)
        r = self.run_dlaunch(["list"])
        self.assertIn("STOPPED", [l.split()[1] for l in r.stdout.splitlines() if l.startswith(job)])


if __name__ == "__main__":
    harness.require_binaries()
    unittest.main(verbosity=2)
