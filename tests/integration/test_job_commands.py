"""Arena-style job commands over the records real jobs leave behind:
list, get, logs (-t, -r, -f), stop, top."""

import os
import subprocess
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
        out, err = follower.communicate(timeout=30)  # -f ends when the job does
        self.assertIn("tick 3", out)
        self.assertIn(f"dlaunch: job {job} STOPPED", err)
        self.assertNotEqual(follower.returncode, 0, "-f of a job that did not succeed")
        self.assertNothingLeft(job)
        r = self.run_dlaunch(["list"])
        self.assertIn("STOPPED", [l.split()[1] for l in r.stdout.splitlines() if l.startswith(job)])

    def get_json(self, job):
        import json
        r = self.run_dlaunch(["get", job, "--json"])
        self.assertEqual(r.returncode, 0, r.stderr)
        return json.loads(r.stdout)

    def test_get_shows_every_rounds_log_and_the_latest_is_the_ranks(self):
        job = self.job_name("rounds")
        r = self.run_dlaunch(["-n", "1", "--max-restarts", "1", "--name", job, "--", "sh", "-c",
                              'echo "round $TORCHELASTIC_RESTART_COUNT"; '
                              '[ "$TORCHELASTIC_RESTART_COUNT" = 1 ] || exit 3'])
        self.assertEqual(r.returncode, 0, r.stderr)
        record = self.get_json(job)
        self.assertTrue(record["logs"]["0"].endswith("/rank-0.1.log"), record["logs"])
        self.assertEqual(sorted(record["log_rounds"]["0"]), ["0", "1"])
        with open(record["logs"]["0"]) as f:
            self.assertEqual(f.read(), "round 1\n")
        text = self.run_dlaunch(["get", job]).stdout
        self.assertRegex(text, r"\n  rank-0\.log  8 bytes\n  rank-0\.1\.log  8 bytes \(round 1\)\n")

    def test_the_record_names_the_workdir_and_the_hosts_python(self):
        job = self.job_name("where")
        workdir = os.path.join(self.tmp, "wd")
        os.makedirs(workdir)
        self.write("wd/t.py", "print('ran')\n")
        hosts = self.write("hosts.toml", '[[host]]\nname = "n1"\naddress = "localhost"\n'
                                         f'python = "{sys.executable}"\n')
        r = self.run_dlaunch(["--hosts", hosts, "--workdir", workdir, "--name", job, "t.py"])
        self.assertEqual(r.returncode, 0, r.stderr)
        record = self.get_json(job)
        self.assertEqual(record["workdir"], workdir)
        self.assertEqual(record["command"], [sys.executable, "-u", "t.py"])

    def test_a_pending_job_has_its_ranks_to_come_and_a_lost_ones_nodes_are_unknown(self):
        job = self.job_name("waits")
        # Node 0 of two, the other never comes: PENDING until stopped.
        p = self.start_dlaunch(["--nnodes", "2", "--node-rank", "0", "--master-addr", "127.0.0.1",
                                "--master-port", str(harness.free_port()), "--name", job, "--",
                                "true"],
                               env=self.env(DLAUNCH_SECRET="s3cret-for-the-test"))
        self.assertTrue(wait_for(lambda: self.run_dlaunch(["list"]).stdout.find(job) >= 0, 30))
        text = self.run_dlaunch(["get", job]).stdout
        self.assertIn("status:     PENDING", text)
        self.assertIn("mode:       manual, 2 nodes, ranks given once every node has joined", text)
        p.kill()
        p.communicate()
        # A running job whose coordinator is killed: LOST, and its nodes'
        # last written "running" is no longer claimed.
        lost = self.job_name("lost")
        p = self.start_dlaunch(["-n", "2", "--name", lost, "--", "sleep", "300"])
        self.assertTrue(wait_for(lambda: [lost, "RUNNING"] in [
            line.split()[:2] for line in self.run_dlaunch(["list"]).stdout.splitlines()], 30))
        self.assertEqual([n["state"] for n in self.get_json(lost)["nodes"]], ["running"])
        p.kill()
        p.communicate()
        record = self.get_json(lost)
        self.assertEqual(record["status"], "LOST")
        self.assertEqual([n["state"] for n in record["nodes"]], ["unknown"])
        self.assertRegex(self.run_dlaunch(["get", lost]).stdout, r"\n  \S+ +0  0-1 +\d+  unknown\n")
        harness.kill_marker(lost)

    def test_logs_print_a_last_line_without_a_newline(self):
        # The crash message a user came to read is often the unfinished last line.
        job = self.job_name("partial")
        r = self.run_dlaunch(["-n", "1", "--name", job, "--", "sh", "-c",
                              "printf 'line1\\nTraceback: partial'; exit 1"])
        self.assertEqual(r.returncode, 1, r.stderr)
        for args in ([], ["-t", "5"], ["-t", "1"], ["-f"]):
            r = subprocess.run([harness.DLAUNCH, "logs", job, *args], capture_output=True,
                               timeout=30, env=self.env())
            want = b"Traceback: partial" if args == ["-t", "1"] else b"line1\nTraceback: partial"
            self.assertEqual(r.stdout, want, args)
        # -f of an ended job says how it ended, and fails as the job did.
        self.assertEqual(r.returncode, 1)
        self.assertIn(f"dlaunch: job {job} FAILED (exit code 1)", r.stderr.decode())
        r = self.run_dlaunch(["logs", job, "--all-ranks"])
        self.assertEqual(r.stdout, "[0] line1\n[0] Traceback: partial\n")

    def test_logs_of_a_rank_that_wrote_nothing_is_empty_not_missing(self):
        job = self.job_name("silent")
        r = self.run_dlaunch(["-n", "2", "--name", job, "--", "sh", "-c",
                              'if [ "$RANK" = 0 ]; then echo hello; fi'])
        self.assertEqual(r.returncode, 0, r.stderr)
        r = self.run_dlaunch(["logs", job, "-r", "1"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "")
        self.assertIn(f"rank 1 of job {job} has written nothing", r.stderr)
        r = self.run_dlaunch(["logs", job, "-r", "5"])
        self.assertEqual(r.returncode, 1)
        self.assertIn(f"job {job} has no rank 5", r.stderr)

    def test_logs_print_every_byte_of_a_large_log(self):
        job = self.job_name("large")
        writer = self.write("write.py", (
            "import os, sys\n"
            "line = b'x' * 1023 + b'\\n'\n"
            "sys.stdout.buffer.write(line * 1030 + b'tail without a newline' * (1 + int(os.environ['RANK'])))\n"))
        self.assertEqual(self.run_dlaunch(["-n", "3", "--name", job, "--", "/usr/bin/python3",
                                           writer]).returncode, 0)
        log = os.path.join(self.state, job, "rank-2.log")
        with open(log, "rb") as f:
            expected = f.read()
        self.assertTrue(expected.endswith(b"tail without a newline" * 3), "the rank log is exact")
        r = subprocess.run([harness.DLAUNCH, "logs", job, "-r", "2"], capture_output=True,
                           timeout=60, env=self.env())
        self.assertEqual(len(r.stdout), len(expected))
        self.assertEqual(r.stdout, expected)


if __name__ == "__main__":
    harness.require_binaries()
    harness.main(verbosity=2)
