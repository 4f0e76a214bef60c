"""Hung jobs: real torch DDP ranks (gloo, Debian's python3-torch) of which one
stops (SIGSTOP) or blocks in a function of the script while the others wait in
the all-reduce. dlaunch must notice the stall, gather every rank's stack, name
the suspect with its host, and end the job HUNG (exit 124) with --hang-timeout;
a job that is only quiet for a while is left alone; and `dlaunch stacks` on a
running detached job shows every rank's stack without losing or tearing a line
of its output."""

import json
import os
import pickle
import re
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
import sshd_harness  # noqa: E402
from harness import DlaunchTestCase, wait_for  # noqa: E402

PY = "/usr/bin/python3"

# Every step all-reduces a tensor and prints a line; HANG_MODE makes rank 1
# stop itself or block in stuck_here() at step 5; PAUSE_AT makes every rank
# sleep PAUSE_S at that step (quiet, not hung).
TRAINER = """
import os, signal, sys, threading, time
print("starting", flush=True)  # the silence the hang timeout counts starts here
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
mode = os.environ.get("HANG_MODE", "")
steps = int(os.environ.get("STEPS", "1000000"))
pause_at = int(os.environ.get("PAUSE_AT", "-1"))


def stuck_here():
    threading.Event().wait()


for step in range(steps):
    if step == 5 and rank == 1:
        if mode == "stop":
            os.kill(os.getpid(), signal.SIGSTOP)
        elif mode == "stuck":
            stuck_here()
    if step == pause_at:
        time.sleep(float(os.environ["PAUSE_S"]))
    t = torch.ones(1)
    dist.all_reduce(t)
    print(f"step {step} sum {int(t.item())}", flush=True)
    time.sleep(0.1)
dist.destroy_process_group()
"""


# A stand-in for what torch's NCCL process group does with its flight recorder
# (torch >= 2.3; the real one needs NCCL and NVIDIA GPUs, which this machine
# lacks): it makes the FIFO TORCH_NCCL_DEBUG_INFO_PIPE_FILE<rank>.pipe, and its
# watchdog thread, reading a byte there, writes the recorder as a pickle to
# TORCH_NCCL_DEBUG_INFO_TEMP_FILE<rank>. Rank 1 has recorded one collective
# fewer; then every rank waits for ever.
FR_RANK = r"""
import os, pickle, threading, time
rank = int(os.environ["RANK"])
e = os.environ
print("recorder", e["TORCH_FR_BUFFER_SIZE"], e["TORCH_NCCL_TRACE_BUFFER_SIZE"],
      e["TORCH_NCCL_DUMP_ON_TIMEOUT"], flush=True)
pipe = e["TORCH_NCCL_DEBUG_INFO_PIPE_FILE"] + str(rank) + ".pipe"
dump = e["TORCH_NCCL_DEBUG_INFO_TEMP_FILE"] + str(rank)
if os.path.exists(pipe):
    os.unlink(pipe)
os.mkfifo(pipe, 0o666)
fd = os.open(pipe, os.O_RDONLY | os.O_NONBLOCK)
entries = [{"collective_seq_id": i, "profiling_name": "nccl:all_reduce"}
           for i in range(1, 6 if rank == 1 else 7)]
def watchdog():
    while True:
        time.sleep(0.2)
        try:
            asked = os.read(fd, 64)
        except BlockingIOError:
            continue
        if asked:
            with open(dump, "wb") as f:
                pickle.dump({"version": "2.5", "rank": rank, "entries": entries}, f)
threading.Thread(target=watchdog, daemon=True).start()
print("step 0", flush=True)
threading.Event().wait()
"""
# A stand-in for torch's analyzer, `torchfrtrace --prefix P DIR`: reads every
# DIR/P<rank> and names the ranks that recorded fewer collectives.
FR_ANALYZER = r"""#!/usr/bin/python3
import os, pickle, sys
prefix, root = sys.argv[2], sys.argv[3]
seen = {}
for name in os.listdir(root):
    if name.startswith(prefix):
        with open(os.path.join(root, name), "rb") as f:
            d = pickle.load(f)
        seen[d["rank"]] = len(d["entries"])
last = max(seen.values())
print(f"Not all ranks joining collective {last} at entry {last - 1}")
print("group info: 0:default_pg")
print("collective: nccl:all_reduce")
print("missing ranks: {" + ", ".join(str(r) for r in sorted(seen) if seen[r] < last) + "}")
"""


def have_torch():
    try:
        return subprocess.run([PY, "-c", "import torch.distributed"], capture_output=True,
                              timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


class HangsTest(DlaunchTestCase):
    def setUp(self):
        super().setUp()
        if not have_torch():
            self.skipTest(f"missing: torch.distributed for {PY} (python3-torch)")
        self.trainer = self.write("train.py", TRAINER)
        # Two agents on this machine: ranks 0-1 on alpha, rank 2 on beta.
        self.hosts = self.write("hosts.toml", """
[[host]]
name = "alpha"
address = "127.0.0.1"
slots = 2
[[host]]
name = "beta"
address = "localhost"
slots = 1
""")

    def run_job(self, job, *flags, timeout=120, **env):
        return self.run_dlaunch(["--hosts", self.hosts, "--name", job, *flags, "--", PY,
                                 self.trainer], env=self.env(**env), timeout=timeout)

    def stacks_dir(self, job):
        root = os.path.join(self.state, job, "stacks")
        dirs = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
        self.assertTrue(dirs, f"no stacks in {root}")
        return os.path.join(root, dirs[-1])

    def read(self, path):
        with open(path) as f:
            return f.read()

    def test_the_flight_recorder_is_asked_for_its_dump_and_analyzed(self):
        # dlaunch's side of the NCCL flight recorder: the ranks' variables,
        # a dump asked through each rank's pipe and carried into stacks/, and
        # the analyzer's finding in the verdict (stand-ins: FR_RANK, FR_ANALYZER).
        job = self.job_name("hang-fr")
        rank = self.write("fr_rank.py", FR_RANK)
        bin_dir = os.path.join(self.tmp, "bin")
        os.mkdir(bin_dir)
        with open(os.path.join(bin_dir, "torchfrtrace"), "w") as f:
            f.write(FR_ANALYZER)
        os.chmod(os.path.join(bin_dir, "torchfrtrace"), 0o755)
        env = self.env(PATH=bin_dir + os.pathsep + os.environ["PATH"])
        r = self.run_dlaunch(["-n", "2", "--name", job, "--hang-timeout", "6s", "--", PY, rank],
                             env=env, timeout=120)
        self.assertEqual(r.returncode, 124, r.stderr)
        self.assertIn("[0] recorder 2000 2000 1", r.stdout)
        self.assertIn("flight recorder: missing ranks: {1}", r.stderr)
        stacks = self.stacks_dir(job)
        for rank_id in (0, 1):
            with open(os.path.join(stacks, f"nccl_trace_rank_{rank_id}"), "rb") as f:
                self.assertEqual(pickle.load(f)["rank"], rank_id)
            self.assertRegex(self.read(os.path.join(stacks, f"rank-{rank_id}.txt")),
                             r"flight recorder: \d+ bytes from ")
        self.assertIn("missing ranks: {1}",
                      self.read(os.path.join(stacks, "flight-recorder-analysis.txt")))
        got = json.loads(self.run_dlaunch(["get", job, "--json"]).stdout)
        self.assertIn("flight recorder: missing ranks: {1}", got["stacks"]["verdict"])

    def test_a_rank_that_stops_itself_is_named_and_the_job_ends_hung(self):
        job = self.job_name("stopped")
        started = time.monotonic()
        r = self.run_job(job, "--hang-timeout", "8s", HANG_MODE="stop")
        took = time.monotonic() - started
        self.assertEqual(r.returncode, 124, r.stderr)
        self.assertIn("suspect: rank 1 on alpha: stopped (state T)", r.stderr)
        self.assertIn("no rank made progress for 8 s", r.stderr)
        stacks = self.stacks_dir(job)
        self.assertEqual(sorted(f for f in os.listdir(stacks) if f.startswith("rank-")),
                         ["rank-0.txt", "rank-1.txt", "rank-2.txt"])
        # The ranks that were not stopped: their Python frames, in the all-reduce.
        for rank in (0, 2):
            text = self.read(os.path.join(stacks, f"rank-{rank}.txt"))
            self.assertIn("stack by faulthandler", text)
            self.assertIn("in all_reduce", text)
            self.assertIn("train.py", text)
        self.assertIn("state T", self.read(os.path.join(stacks, "rank-1.txt")))
        got = json.loads(self.run_dlaunch(["get", job, "--json"]).stdout)
        self.assertEqual(got["status"], "HUNG")
        self.assertEqual(got["stacks"]["dir"], stacks)
        self.assertTrue(any("rank 1 on alpha" in v for v in got["stacks"]["verdict"]), got)
        self.assertNothingLeft(job)
        # Not a timing assertion: that it ended at all, well before the test's limit.
        self.assertLess(took, 100)

    def test_a_rank_blocked_in_a_function_is_named_and_its_stack_shows_it(self):
        job = self.job_name("stuck")
        r = self.run_job(job, "--hang-timeout", "8s", HANG_MODE="stuck")
        self.assertEqual(r.returncode, 124, r.stderr)
        self.assertRegex(r.stderr, r"suspect: rank 1 on alpha: its stack differs from the 2 "
                                   r"ranks that wait together \(ranks 0,2\)")
        text = self.read(os.path.join(self.stacks_dir(job), "rank-1.txt"))
        self.assertIn("in stuck_here", text)
        summary = self.read(os.path.join(self.stacks_dir(job), "summary.txt"))
        # The odd one out first.
        self.assertLess(summary.index("rank 1 (1 rank)"), summary.index("ranks 0,2 (2 ranks)"))
        self.assertNothingLeft(job)

    def test_a_job_quiet_for_half_the_timeout_is_left_alone(self):
        job = self.job_name("quiet")
        r = self.run_job(job, "--hang-timeout", "12s", STEPS="8", PAUSE_AT="3", PAUSE_S="6")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("made progress", r.stderr)
        self.assertNotIn("suspect", r.stderr)
        self.assertEqual(r.stdout.count("sum 3"), 24, r.stdout)

    def test_stacks_of_a_running_detached_job_leave_its_output_whole(self):
        job = self.job_name("detached")
        steps = 60
        r = self.run_dlaunch(["-d", "--hosts", self.hosts, "--name", job, "--", PY, self.trainer],
                             env=self.env(STEPS=str(steps)))
        self.assertEqual(r.returncode, 0, r.stderr)
        wait_for(lambda: os.path.exists(os.path.join(self.state, job, "rank-2.log")) and
                 "step 3" in self.read(os.path.join(self.state, job, "rank-2.log")), timeout=60)
        outputs = []
        for _ in range(2):
            s = self.run_dlaunch(["stacks", job], timeout=120)
            self.assertEqual(s.returncode, 0, s.stderr)
            outputs.append(s.stdout)
        for out in outputs:
            ranks = set()
            for m in re.finditer(r"^ranks? ([0-9,\-]+) \(", out, re.M):
                for part in m.group(1).split(","):
                    a, _, b = part.partition("-")
                    ranks.update(range(int(a), int(b or a) + 1))
            self.assertEqual(ranks, {0, 1, 2}, out)
            self.assertIn("verdict:", out)
        one = self.run_dlaunch(["stacks", job, "-r", "2"], timeout=120)
        self.assertEqual(one.returncode, 0, one.stderr)
        self.assertIn("rank 2 (1 rank)", one.stdout)
        wait_for(lambda: json.loads(self.run_dlaunch(["get", job, "--json"]).stdout)["status"]
                 == "SUCCEEDED", timeout=90)
        for rank in range(3):
            log = self.read(os.path.join(self.state, job, f"rank-{rank}.log"))
            self.assertEqual(log.splitlines(),
                             ["starting"] + [f"step {i} sum 3" for i in range(steps)])


class HangsOverSshTest(unittest.TestCase):
    """The same on three SSH hosts in network namespaces, one rank each."""

    @classmethod
    def setUpClass(cls):
        if not have_torch():
            raise unittest.SkipTest(f"missing: torch.distributed for {PY} (python3-torch)")
        sshd_harness.require_sshd()
        sshd_harness.require_netns("hang tests over SSH (three hosts)")
        cls.hosts = sshd_harness.SshHosts(3)
        cls.hosts.__enter__()
        cls.hosts.write_known_hosts()
        cls.trainer = os.path.join(cls.hosts.tmp, "train.py")
        with open(cls.trainer, "w") as f:
            f.write(TRAINER)
        os.chmod(cls.trainer, 0o644)
        cls.hosts_file = cls.hosts.hosts_file([1, 1, 1])

    @classmethod
    def tearDownClass(cls):
        cls.hosts.close()

    def setUp(self):
        self.job = f"hang-ssh-{os.getpid()}-{self._testMethodName[5:20]}"

    def tearDown(self):
        harness.kill_marker(self.job)

    def state(self):
        return os.path.join(self.hosts.tmp, "state")

    def latest_stacks(self):
        root = os.path.join(self.state(), self.job, "stacks")
        return os.path.join(root, sorted(d for d in os.listdir(root)
                                         if os.path.isdir(os.path.join(root, d)))[-1])

    def test_a_stopped_rank_on_one_host_is_named_with_its_host(self):
        r = self.hosts.dlaunch(["--hosts", self.hosts_file, "--name", self.job, "--hang-timeout",
                                "8s", "--env", "HANG_MODE=stop", "--", PY, self.trainer])
        self.assertEqual(r.returncode, 124, r.stderr)
        host1 = self.hosts.hosts[1]["name"]
        self.assertIn(f"suspect: rank 1 on {host1}: stopped (state T)", r.stderr)
        stacks = self.latest_stacks()
        for rank in (0, 2):
            with open(os.path.join(stacks, f"rank-{rank}.txt")) as f:
                text = f.read()
            self.assertIn("in all_reduce", text)
        self.assertEqual(harness.wait_no_marker(self.job), [])

    def test_stacks_of_a_detached_job_on_three_hosts(self):
        steps = 80
        r = self.hosts.dlaunch(["-d", "--hosts", self.hosts_file, "--name", self.job, "--env",
                                f"STEPS={steps}", "--", PY, self.trainer])
        self.assertEqual(r.returncode, 0, r.stderr)
        log2 = os.path.join(self.state(), self.job, "rank-2.log")
        def started():
            if not os.path.exists(log2):
                return False
            with open(log2) as f:
                return "step 3 " in f.read()
        wait_for(started, timeout=90)
        s = self.hosts.dlaunch(["stacks", self.job])
        self.assertEqual(s.returncode, 0, s.stderr)
        self.assertEqual(len(re.findall(r"^ranks? [0-9,\-]+ \(", s.stdout, re.M)) >= 1, True)
        for rank in range(3):
            self.assertTrue(os.path.exists(os.path.join(self.latest_stacks(), f"rank-{rank}.txt")))
            with open(os.path.join(self.latest_stacks(), f"rank-{rank}.txt")) as f:
                self.assertIn(f"rank {rank} on {self.hosts.hosts[rank]['name']}", f.read())
        wait_for(lambda: json.loads(self.hosts.dlaunch(["get", self.job, "--json"]).stdout)
                 ["status"] == "SUCCEEDED", timeout=120)
        for rank in range(3):
            with open(os.path.join(self.state(), self.job, f"rank-{rank}.log")) as f:
                self.assertEqual(f.read().splitlines(),
                                 ["starting"] + [f"step {i} sum 3" for i in range(steps)])


if __name__ == "__main__":
    harness.require_binaries()
    harness.main(verbosity=2)
