"""A job's life as a cron user or an operator sees it: --detach, the status
record as it moves (PENDING, RUNNING, ..., LOST), unique names, `logs -f` on a
detached job, --json, delete."""

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import DlaunchTestCase, wait_for  # noqa: E402

TICKS = 'for i in $(seq 1 {n}); do echo "tick $i"; sleep 0.1; done'


class JobLifecycleTest(DlaunchTestCase):
    def get(self, job):
        r = self.run_dlaunch(["get", job, "--json"])
        self.assertEqual(r.returncode, 0, r.stderr)
        return json.loads(r.stdout)

    def status(self, job):
        return self.get(job)["status"]

    def in_small_state_dir(self, script_body):
        """Runs `script_body` (sh, with $STATE set) in a mount namespace of its
        own whose state dir is a 256 KiB tmpfs; the mount goes with it."""
        if os.geteuid() != 0:
            self.skipTest("not root: a tmpfs state dir needs a mount namespace")
        if not shutil.which("unshare"):
            self.skipTest("missing: unshare (util-linux)")
        state = os.path.join(self.tmp, "small-state")
        os.makedirs(state, exist_ok=True)
        script = (f"STATE={shlex.quote(state)}\n"
                  "mount -t tmpfs -o size=256k tmpfs \"$STATE\" || exit 99\n" + script_body)
        r = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True,
                           timeout=60, env=self.env(), stdin=subprocess.DEVNULL)
        if r.returncode == 99:
            self.skipTest("no mounts: mount -t tmpfs failed: " + r.stderr.strip())
        return r

    def test_a_detached_job_that_cannot_write_its_record_starts_nothing(self):
        job = self.job_name("full")
        ran = os.path.join(self.tmp, "ran")
        q = shlex.quote
        r = self.in_small_state_dir(
            "head -c 1M /dev/zero > \"$STATE/filler\" 2>/dev/null\n"
            f"DLAUNCH_STATE_DIR=\"$STATE\" {q(harness.DLAUNCH)} -d --name {q(job)} "
            f"-- sh -c {q('touch ' + q(ran))}\n"
            "echo \"rc=$?\"\n"
            "sleep 2\n"
            f"DLAUNCH_STATE_DIR=\"$STATE\" {q(harness.DLAUNCH)} list --all\n")
        self.assertIn("rc=1", r.stdout, r.stderr)
        self.assertNotIn(job + "\n", r.stdout.split("rc=")[0])  # no name printed as started
        self.assertIn("none was started", r.stderr)
        self.assertFalse(os.path.exists(ran), "the detached job's rank ran")
        self.assertNotIn(job, r.stdout.split("rc=1", 1)[1])  # and `list` knows of no job

    def test_a_job_that_fills_its_state_dir_is_not_lost_when_it_succeeds(self):
        # The rank fills the disk its record lives on, then succeeds: the last
        # record still says so (it used to be LOST, since job.toml could not
        # be rewritten at the end).
        job = self.job_name("fills")
        q = shlex.quote
        fill = ("head -c 1M /dev/zero > \"$DLAUNCH_TEST_STATE/filler\" 2>/dev/null; "
                "df -k \"$DLAUNCH_TEST_STATE\" | tail -1")
        r = self.in_small_state_dir(
            "export DLAUNCH_TEST_STATE=\"$STATE\"\n"
            f"DLAUNCH_STATE_DIR=\"$STATE\" {q(harness.DLAUNCH)} --name {q(job)} "
            f"-- sh -c {q(fill)}\n"
            "echo \"rc=$?\"\n"
            f"DLAUNCH_STATE_DIR=\"$STATE\" {q(harness.DLAUNCH)} list --all\n")
        self.assertIn("rc=0", r.stdout, r.stderr)
        self.assertRegex(r.stdout, r"\[0\] tmpfs .* 100% ", "the rank did not fill the state dir")
        rows = [line.split() for line in r.stdout.split("rc=0", 1)[1].splitlines()]
        self.assertIn([job, "SUCCEEDED"], [row[:2] for row in rows], r.stdout + r.stderr)

    def test_a_shared_state_dir_shows_another_machines_job_as_it_is(self):
        # A home on NFS: this state dir is also another machine's. That machine
        # is a mount, UTS and PID namespace with its own host name and boot id
        # (a bind mount over /proc's), running a job into the same state dir.
        if os.geteuid() != 0:
            self.skipTest("not root: another machine needs mount, UTS and PID namespaces")
        if not shutil.which("unshare"):
            self.skipTest("missing: unshare (util-linux)")
        job = self.job_name("nfs")
        gate = os.path.join(self.tmp, "gate")
        boot = os.path.join(self.tmp, "boot_id")
        with open(boot, "w") as f:
            f.write("0d15ea5e-0000-4000-8000-000000000042\n")
        q = shlex.quote
        rank = f"echo started; while [ ! -e {q(gate)} ]; do sleep 0.05; done"
        other = subprocess.Popen(
            ["unshare", "-m", "-u", "-p", "-f", "--kill-child", "--mount-proc", "sh", "-c",
             f"mount --bind {q(boot)} /proc/sys/kernel/random/boot_id || exit 99\n"
             "hostname dlx-other-machine\n"
             f"exec {q(harness.DLAUNCH)} --name {q(job)} -- sh -c {q(rank)}"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=self.env(),
            stdin=subprocess.DEVNULL)
        self.procs.append(other)  # killed at the end whatever happens (and its job with it)
        try:
            if not wait_for(lambda: os.path.exists(os.path.join(self.state, job, "job.toml"))
                            and self.status(job) == "RUNNING", 30):
                other.kill()
                out, err = other.communicate()
                if other.returncode == 99:
                    self.skipTest("no mounts: cannot bind a boot id over /proc: " + err.strip())
                self.fail("the other machine's job never ran: " + out + err)
            # Here it is RUNNING as written, not LOST, and says where it runs.
            record = self.get(job)
            self.assertEqual(record["status"], "RUNNING")
            self.assertEqual(record["coordinator_host"], "dlx-other-machine")
            self.assertTrue(record["coordinator_elsewhere"])
            got = self.run_dlaunch(["get", job])
            self.assertIn("on dlx-other-machine (as it last wrote; not checked here)", got.stdout)
            # Its name stays taken: the live job's directory is not moved aside.
            again = self.run_dlaunch(["--name", job, "--", "true"])
            self.assertEqual(again.returncode, 2, again.stderr)
            self.assertIn(f"job '{job}' is RUNNING (coordinator pid ", again.stderr)
            self.assertIn(" on dlx-other-machine): a job's name is taken", again.stderr)
            self.assertTrue(os.path.exists(os.path.join(self.state, job, "job.toml")))
            # No signal to a pid of another machine: it says where to stop it.
            stop = self.run_dlaunch(["stop", job])
            self.assertEqual(stop.returncode, 1, stop.stderr)
            self.assertIn("runs on dlx-other-machine, which shares this state dir: stop it there",
                          stop.stderr)
            self.assertIsNone(other.poll(), "the other machine's job ended")
        finally:
            open(gate, "w").close()
            try:
                other.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                other.kill()
                other.communicate()
        self.assertEqual(other.returncode, 0)
        self.assertEqual(self.status(job), "SUCCEEDED")

    def test_detached_job_runs_and_logs_follow_returns_at_its_end(self):
        job = self.job_name("det")
        # The ranks wait at a gate that only opens once `dlaunch -d` has
        # returned: a dlaunch -d that waited for its job would never return
        # (the run's 60 s timeout only ends that hang).
        gate = os.path.join(self.tmp, "gate")
        ranks = f"while [ ! -e {shlex.quote(gate)} ]; do sleep 0.05; done; " + TICKS.format(n=30)
        r = self.run_dlaunch(["-d", "--name", job, "-n", "2", "--", "sh", "-c", ranks],
                             stdin=subprocess.DEVNULL, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.strip(), job)
        self.assertIn(self.status(job), ("PENDING", "RUNNING"))
        open(gate, "w").close()
        self.assertTrue(wait_for(lambda: self.status(job) == "RUNNING", 30))
        rows = [l.split() for l in self.run_dlaunch(["list"]).stdout.splitlines()]
        self.assertIn([job, "RUNNING", "1", "2"], [row[:4] for row in rows])
        follow = self.run_dlaunch(["logs", job, "-f"], timeout=60)
        self.assertEqual(follow.returncode, 0, follow.stderr)
        self.assertEqual(follow.stdout.splitlines(), [f"tick {i}" for i in range(1, 31)])
        record = self.get(job)
        self.assertEqual(record["status"], "SUCCEEDED")
        self.assertEqual(record["exit_code"], 0)
        self.assertTrue(record["detached"])
        self.assertTrue(os.path.exists(os.path.join(record["dir"], "coordinator.log")))

    def test_a_detached_jobs_rank_stderr_stays_out_of_coordinator_log(self):
        # Trainers log to stderr (Python's logging, tqdm): copying it into the
        # coordinator's own log would double every rank log, without limit.
        job = self.job_name("deterr")
        r = self.run_dlaunch(["-d", "--name", job, "-n", "2", "--", "sh", "-c",
                              "for i in 1 2 3; do echo err-line-$i >&2; echo out-line-$i; done"],
                             stdin=subprocess.DEVNULL)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(wait_for(lambda: self.status(job) == "SUCCEEDED", 60))
        record = self.get(job)
        with open(os.path.join(record["dir"], "coordinator.log")) as f:
            coordinator_log = f.read()
        self.assertNotIn("line-", coordinator_log)
        with open(os.path.join(record["dir"], "rank-1.log")) as f:
            self.assertEqual(sorted(f.read().split()), sorted(
                [f"err-line-{i}" for i in (1, 2, 3)] + [f"out-line-{i}" for i in (1, 2, 3)]))

    def test_json_has_the_documented_fields(self):
        job = self.job_name("json")
        self.assertEqual(self.run_dlaunch(["--name", job, "-n", "2", "--", "echo", "x"]).returncode,
                         0)
        record = self.get(job)
        for field in ("name", "status", "mode", "command", "coordinator_pid", "detached", "nnodes",
                      "ranks", "restarts", "started", "finished", "duration_s", "exit_code",
                      "root_cause", "root_cause_tail", "nodes", "dir", "logs", "tensorboard_dir",
                      "tensorboard_logdir", "checkpoint_dir", "checkpoint_copy"):
            self.assertIn(field, record)
        self.assertEqual(record["name"], job)
        self.assertEqual(record["ranks"], 2)
        self.assertEqual(sorted(record["logs"]), ["0", "1"])
        self.assertEqual(record["nodes"][0]["first_rank"], 0)
        self.assertEqual(record["nodes"][0]["ranks"], 2)
        self.assertEqual(record["nodes"][0]["state"], "done")
        listed = json.loads(self.run_dlaunch(["list", "--json"]).stdout)
        self.assertEqual([j["name"] for j in listed], [job])
        failed = json.loads(self.run_dlaunch(["list", "--json", "--status", "FAILED"]).stdout)
        self.assertEqual(failed, [])
        r = self.run_dlaunch(["list", "--status", "DONE"])
        self.assertEqual(r.returncode, 2)
        self.assertIn("unknown status 'DONE'", r.stderr)

    def test_coordinator_killed_with_9_is_lost(self):
        job = self.job_name("lost")
        r = self.run_dlaunch(["-d", "--name", job, "-n", "1", "--", "sleep", "60"],
                             stdin=subprocess.DEVNULL)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(wait_for(lambda: self.status(job) == "RUNNING", 30))
        os.kill(self.get(job)["coordinator_pid"], signal.SIGKILL)
        self.assertTrue(wait_for(lambda: self.status(job) == "LOST", 10))
        self.assertNothingLeft(job)
        self.assertIn("LOST", self.run_dlaunch(["get", job]).stdout)
        # A LOST job's name is free again; the old run is kept under another name.
        r = self.run_dlaunch(["--name", job, "-n", "1", "--", "true"])
        self.assertEqual(r.returncode, 0, r.stderr)
        names = [j["name"] for j in json.loads(self.run_dlaunch(["list", "--json"]).stdout)]
        self.assertEqual(names[0], job)
        self.assertTrue(any(n.startswith(job + ".") for n in names[1:]), names)

    def test_two_starts_with_one_name_at_the_same_instant_run_once(self):
        job = self.job_name("same")
        results = [None, None]
        barrier = threading.Barrier(2)

        def start(i):
            barrier.wait()
            results[i] = self.run_dlaunch(["--detach", "--name", job, "-n", "1", "--", "sleep",
                                           "30"], stdin=subprocess.DEVNULL)
        threads = [threading.Thread(target=start, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        codes = sorted(r.returncode for r in results)
        self.assertEqual(codes, [0, 2], [r.stderr for r in results])
        refused = next(r for r in results if r.returncode == 2)
        pid = self.get(job)["coordinator_pid"]
        self.assertIn(f"job '{job}' is", refused.stderr)
        self.assertIn(f"coordinator pid {pid}", refused.stderr)
        self.assertTrue(wait_for(lambda: len(harness.processes_with_marker(job)) >= 1, 30))
        time.sleep(0.5)
        self.assertEqual(len(harness.processes_with_marker(job)), 1, "one rank of one job")
        r = self.run_dlaunch(["stop", job])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.status(job), "STOPPED")
        self.assertNothingLeft(job)

    def test_cron_like_start_without_tty_stdin_or_environment(self):
        job = self.job_name("cron")
        env = {"PATH": "/usr/bin:/bin", "DLAUNCH_STATE_DIR": self.state}
        r = subprocess.run(["env", "-i"] + [f"{k}={v}" for k, v in env.items()] +
                           [harness.DLAUNCH, "--detach", "--name", job, "-n", "2", "--", "sh",
                            "-c", "echo from cron $RANK"],
                           stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60,
                           start_new_session=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(wait_for(lambda: self.status(job) == "SUCCEEDED", 30))
        r = self.run_dlaunch(["logs", job, "--all-ranks"])
        self.assertEqual(sorted(r.stdout.splitlines()), ["[0] from cron 0", "[1] from cron 1"])

    def test_delete_refuses_an_active_job_and_removes_a_finished_one(self):
        job = self.job_name("del")
        r = self.run_dlaunch(["-d", "--name", job, "-n", "1", "--", "sleep", "30"],
                             stdin=subprocess.DEVNULL)
        self.assertEqual(r.returncode, 0, r.stderr)
        r = self.run_dlaunch(["delete", job])
        self.assertEqual(r.returncode, 1)
        self.assertIn("stop it first", r.stderr)
        self.assertEqual(self.run_dlaunch(["stop", job, "--grace", "1"]).returncode, 0)
        r = self.run_dlaunch(["delete", job])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.state, job)))
        self.assertEqual(self.run_dlaunch(["get", job]).returncode, 1)

    def test_every_subcommand_has_help_and_an_example(self):
        top = self.run_dlaunch(["--help"]).stdout
        for command in ("run", "list", "get", "logs", "stop", "delete", "top", "check"):
            self.assertIn(f"dlaunch {command}" if command != "run" else "dlaunch --", top)
            r = self.run_dlaunch([command, "--help"])
            self.assertEqual(r.returncode, 0, f"{command} --help: {r.stderr}")
            self.assertIn("Usage", r.stdout + r.stderr)


if __name__ == "__main__":
    harness.require_binaries()
    harness.main(verbosity=2)
