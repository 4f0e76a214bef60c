"""Output under pressure, as a user hits it: a terminal that stops reading, a
flood of output from every rank, a full log disk, and the small ways output
was lost or mislabelled."""

import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from harness import (DLAUNCH, DlaunchTestCase, free_port, parent_of,  # noqa: E402
                     processes_with_marker, require_binaries, vm_hwm_kib, wait_for,
                     wait_for_text)


def uses_asan(pid):
    """Whether a process runs with the AddressSanitizer runtime (a sanitized build):
    GCC's is a shared library in its maps; clang links its runtime in, so the
    build's own setting (ctest passes it) says so there."""
    if "address" in os.environ.get("DLAUNCH_SANITIZE", ""):
        return True
    try:
        with open(f"/proc/{pid}/maps") as f:
            return "libasan" in f.read()
    except OSError:
        return False


class StalledTerminalTest(DlaunchTestCase):
    def test_a_reader_that_stalls_past_the_heartbeat_timeout_does_not_fail_the_job(self):
        # Before, the coordinator blocked writing to the stalled pipe, missed
        # heartbeats, and the agent stopped the ranks as "coordinator lost".
        job = self.job_name("stall")
        read_end, write_end = os.pipe()
        p = subprocess.Popen(
            [DLAUNCH, "-n", "2", "--heartbeat-timeout", "3", "--name", job, "--", "sh", "-c",
             "seq 1 200000; sleep 8; echo finished"],
            stdout=write_end, stderr=subprocess.PIPE, text=True, env=self.env())
        self.procs.append(p)
        os.close(write_end)
        time.sleep(7)  # the pipe is full and unread for more than twice the timeout
        with os.fdopen(read_end, "rb") as reader:
            out = reader.read()
        _, err = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 0, err)
        self.assertNotIn("lost", err)
        self.assertIn(b"[0] finished\n", out)
        logs = os.path.join(self.state, job)
        for rank in (0, 1):
            with open(os.path.join(logs, f"rank-{rank}.log"), "rb") as f:
                lines = f.read().splitlines()
            self.assertEqual(len(lines), 200001)
            self.assertEqual(lines[-1], b"finished")

    def test_no_skip_holds_the_ranks_back_and_loses_nothing(self):
        job = self.job_name("noskip")
        read_end, write_end = os.pipe()
        p = subprocess.Popen(
            [DLAUNCH, "-n", "2", "--no-skip", "--heartbeat-timeout", "3", "--name", job, "--",
             "sh", "-c", "seq 1 1500000; echo finished"],
            stdout=write_end, stderr=subprocess.PIPE, text=True, env=self.env())
        self.procs.append(p)
        os.close(write_end)
        time.sleep(7)  # far more than the buffers hold is waiting to be written
        with os.fdopen(read_end, "rb") as reader:
            out = reader.read()
        _, err = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 0, err)
        self.assertNotIn("skipped", err)
        for rank in (0, 1):
            lines = [l for l in out.split(b"\n") if l.startswith(b"[%d] " % rank)]
            expected = [b"[%d] %d" % (rank, i) for i in range(1, 1500001)] + [b"[%d] finished" % rank]
            self.assertEqual(lines, expected)

    def test_ctrl_c_during_a_stall_stops_the_job_at_once(self):
        job = self.job_name("stallint")
        read_end, write_end = os.pipe()
        p = subprocess.Popen(
            [DLAUNCH, "-n", "1", "--name", job, "--", "sh", "-c", "while true; do seq 1 10000; done"],
            stdout=write_end, stderr=subprocess.PIPE, text=True, env=self.env())
        self.procs.append(p)
        os.close(write_end)
        time.sleep(3)  # stalled: nobody reads
        p.send_signal(signal.SIGINT)
        # The ranks stop while the terminal is still stalled (before, the
        # coordinator sat blocked in a write and never saw the signal).
        self.assertNothingLeft(job)
        with os.fdopen(read_end, "rb") as reader:
            reader.read()
        p.communicate(timeout=30)
        self.assertEqual(p.returncode, 130)


class FloodTest(DlaunchTestCase):
    def test_four_ranks_of_yes_keep_the_agent_and_coordinator_bounded(self):
        job = self.job_name("flood")
        p = subprocess.Popen(
            [DLAUNCH, "-n", "4", "--name", job, "--", "timeout", "20", "yes"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=self.env())
        self.procs.append(p)
        # The ranks' parent is the agent worker that reads their pipes.
        agents = wait_for(lambda: sorted({parent_of(r) for r in processes_with_marker(job)}),
                          timeout=10)
        self.assertTrue(agents, "no rank found")
        peaks = {}
        deadline = time.monotonic() + 19.5
        while time.monotonic() < deadline:
            for pid in [p.pid] + agents:
                peaks[pid] = max(peaks.get(pid, 0), vm_hwm_kib(pid) or 0)
            time.sleep(0.2)
        sanitized = uses_asan(p.pid)
        p.communicate(timeout=60)
        self.assertEqual(p.returncode, 124)  # timeout's code: the ranks were ended by it
        # Bounded: the output lane (1 MiB on the agent) and the terminal buffer (8 MiB) plus
        # the program itself; before, the agent grew by hundreds of MB a second
        # (2.4 GB after 8 s). AddressSanitizer keeps up to 256 MiB of freed
        # memory in quarantine, so its builds get that much more room.
        bound = (128 + (512 if sanitized else 0)) * 1024
        for pid, kib in peaks.items():
            self.assertLess(kib, bound, f"process {pid} reached {kib} KiB")


class FullDiskTest(DlaunchTestCase):
    def setUp(self):
        super().setUp()
        if os.geteuid() != 0:
            self.skipTest("not root: mounting a 1 MiB tmpfs needs root")
        self.mnt = tempfile.mkdtemp(prefix="dlaunch-full-")
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", self.mnt],
                           capture_output=True, text=True)
        if r.returncode != 0:
            os.rmdir(self.mnt)
            self.skipTest(f"no mounts: mount -t tmpfs failed: {r.stderr.strip()}")

    def tearDown(self):
        subprocess.run(["umount", self.mnt], capture_output=True)
        os.rmdir(self.mnt)
        super().tearDown()

    def test_a_full_log_disk_is_reported_and_never_turns_into_success(self):
        job = self.job_name("full")
        r = self.run_dlaunch(["-n", "2", "--log-dir", self.mnt, "--name", job, "--", "sh", "-c",
                              "seq 1 200000; exit 3"])
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("No space left on device", r.stderr)
        self.assertRegex(r.stderr, r"rank log incomplete: .*rank-\d\.log: \d+ bytes not written")
        listing = self.run_dlaunch(["list", "--log-dir", self.mnt])
        row = [line for line in listing.stdout.splitlines() if line.startswith(job)]
        self.assertEqual(len(row), 1, listing.stdout)
        self.assertNotIn("SUCCEEDED", row[0])


class SmallLossesTest(DlaunchTestCase):
    def test_a_rank_that_exits_130_by_itself_failed(self):
        job = self.job_name("own130")
        r = self.run_dlaunch(["-n", "1", "--name", job, "--", "sh", "-c", "exit 130"])
        self.assertEqual(r.returncode, 130)
        listing = self.run_dlaunch(["list"])
        row = [line.split() for line in listing.stdout.splitlines() if line.startswith(job)]
        self.assertEqual(row[0][1], "FAILED")
        self.assertIn("FAILED (exit code 130)", self.run_dlaunch(["get", job]).stdout)

    def test_ranks_filter_outside_the_world_is_refused(self):
        r = self.run_dlaunch(["-n", "4", "--ranks-filter", "5", "--", "true"])
        self.assertEqual(r.returncode, 2)
        self.assertIn("--ranks-filter 5: this job has ranks 0..3 only", r.stderr)

    def test_an_empty_program_name_is_named_as_such(self):
        r = self.run_dlaunch(["-n", "1", "--", ""])
        self.assertEqual(r.returncode, 2)
        self.assertIn("the program name is empty", r.stderr)

    def test_hosts_file_env_may_not_set_rank_variables(self):
        hosts = self.write("hosts.toml", '[[host]]\naddress = "127.0.0.1"\n'
                                         'env = { WORLD_SIZE = "8" }\n')
        r = self.run_dlaunch(["--hosts", hosts, "--", "true"])
        self.assertEqual(r.returncode, 2)
        self.assertIn(f"{hosts}:3:9:", r.stderr)
        self.assertIn("'WORLD_SIZE' is set by dlaunch for every rank", r.stderr)


class ProgressAndBytesTest(DlaunchTestCase):
    def test_a_carriage_return_progress_bar_shows_while_it_runs(self):
        # tqdm draws "\rtext" without a newline until the very end.
        job = self.job_name("bar")
        # The bar stops at 20% until a progress line has reached the terminal
        # (a gate the test opens once it saw one): shown while the bar runs, or
        # never, as the bar cannot end before (the 60 s wait only ends a hang).
        gate = os.path.join(self.tmp, "gate")
        stdout = os.path.join(self.tmp, "stdout")
        with open(stdout, "wb") as out:
            p = subprocess.Popen(
                [DLAUNCH, "-n", "1", "--name", job, "--", "sh", "-c",
                 f'i=0; while [ $i -lt 40 ]; do i=$((i+1)); printf "\\rprogress %d%%" $i;'
                 f' if [ $i = 20 ]; then while [ ! -e {gate} ]; do sleep 0.05; done; fi;'
                 ' sleep 0.25; done; printf "\\n"'],
                stdout=out, stderr=subprocess.PIPE, env=self.env())
        self.procs.append(p)
        seen = wait_for_text(stdout, "[0] progress ", 60)
        open(gate, "w").close()
        self.assertIsNotNone(seen, "no progress line while the bar waited at 20%")
        _, err = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 0, err)
        with open(stdout, "rb") as f:
            shown = f.read().splitlines(keepends=True)
        self.assertTrue(shown[0].startswith(b"[0] progress "), shown)
        self.assertLess(len(shown), 40)  # at most about one a second
        self.assertEqual(shown[-1], b"[0] progress 40%\n")
        with open(os.path.join(self.state, job, "rank-0.log"), "rb") as f:
            expected = b"".join(b"\rprogress %d%%" % i for i in range(1, 41)) + b"\n"
            self.assertEqual(f.read(), expected)

    def test_on_a_terminal_one_ranks_bar_is_redrawn_in_place(self):
        import pty
        master, slave = pty.openpty()
        job = self.job_name("ttybar")
        p = subprocess.Popen(
            [DLAUNCH, "-n", "2", "--name", job, "--", "sh", "-c",
             'if [ "$RANK" = 0 ]; then i=0; while [ $i -lt 8 ]; do i=$((i+1));'
             ' printf "\\rbar %d" $i >&2; sleep 0.2; done; printf "\\rbar done\\n" >&2;'
             ' else sleep 0.5; echo other-line; fi'],
            stdin=subprocess.DEVNULL, stdout=slave, stderr=slave, env=self.env())
        self.procs.append(p)
        os.close(slave)
        screen = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the terminal's last writer is gone
                break
            if not chunk:
                break
            screen += chunk
        os.close(master)
        self.assertEqual(p.wait(timeout=30), 0)
        # Every update redraws the same line ("\r" and clear to its end)...
        for i in range(2, 9):
            self.assertIn(b"\r\x1b[K[0] bar %d" % i, screen)
        # ...the other rank's line goes above the bar, which is drawn again...
        self.assertRegex(screen, rb"\r\x1b\[K\[1\] other-line\r?\n\[0\] bar \d")
        # ...and the bar's last state ends its line.
        self.assertIn(b"\r\x1b[K[0] bar done\r\n", screen)

    def test_a_3_mb_line_is_byte_identical_in_the_log(self):
        job = self.job_name("big")
        data = os.path.join(self.tmp, "big.bin")
        with open(data, "wb") as f:
            f.write(b"y" * 3_000_000 + b"\n" + b"tail without newline")
        r = self.run_dlaunch(["-n", "1", "--name", job, "--", "cat", data])
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(data, "rb") as a, open(os.path.join(self.state, job, "rank-0.log"), "rb") as b:
            self.assertEqual(a.read(), b.read())

    def test_output_of_a_background_child_after_the_rank_exits_is_kept(self):
        # Rank 0 exits at once, leaving a child that writes a second later,
        # while rank 1 keeps the round going for 3 s.
        job = self.job_name("bg")
        r = self.run_dlaunch(["-n", "2", "--name", job, "--", "sh", "-c",
                              'if [ "$RANK" = 0 ]; then (sleep 1; echo from-the-background) &'
                              ' echo main-done; else sleep 3; fi'])
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(os.path.join(self.state, job, "rank-0.log")) as f:
            text = f.read()
        self.assertIn("main-done", text)
        self.assertIn("from-the-background", text)

    def test_a_node_started_with_another_nnodes_is_refused_at_once(self):
        secret = self.write("secret", "s" * 64, mode=0o600)
        port = str(free_port())
        node0 = self.start_dlaunch(["--nnodes", "2", "--node-rank", "0", "--master-addr",
                                    "127.0.0.1", "--rdzv-port", port, "--secret-file", secret,
                                    "--rdzv-timeout", "30", "--", "true"])
        r = self.run_dlaunch(["--nnodes", "3", "--node-rank", "1", "--master-addr", "127.0.0.1",
                              "--rdzv-port", port, "--secret-file", secret, "--", "true"],
                             timeout=20)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("started with --nnodes 3, but node 0 runs the job with --nnodes 2", r.stderr)
        node0.send_signal(signal.SIGINT)
        node0.communicate(timeout=30)


if __name__ == "__main__":
    require_binaries()
    import harness  # noqa: E402
    harness.main()
