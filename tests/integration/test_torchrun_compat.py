"""torchrun's command lines, with only the first word changed to dlaunch, run a
real torch DDP script (Debian's python3-torch, gloo): PyTorch's documented
single-node, --standalone, multi-node static (--node-rank/--master-addr) and
c10d (--rdzv-endpoint, the same line on every node) lines, on this machine,
on two "nodes" in network namespaces and on two SSH hosts. Every flag of
torchrun's parser is accepted. A deepspeed hostfile line with --num_gpus runs a
script that parses the --local_rank=N deepspeed appends."""

import json
import os
import re
import shutil
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import sshd_harness  # noqa: E402

# Debian's python3-torch; a GPU machine's CUDA PyTorch through the variable.
TORCH_PYTHON = os.environ.get("DLAUNCH_TEST_TORCH_PYTHON", "/usr/bin/python3")

# An ordinary DDP script: the environment torchrun gives, one all-reduce over
# gloo and one DDP step; it prints what a user would look at.
DDP_SCRIPT = r'''
import os, sys
import torch
import torch.distributed as dist
dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
t = torch.tensor([float(rank + 1)])
dist.all_reduce(t)
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
model(torch.ones(2, 4)).sum().backward()
print(f"ddp rank={rank} world={world} local={os.environ['LOCAL_RANK']} "
      f"group={os.environ['GROUP_RANK']} sum={int(t.item())} "
      f"run={os.environ['TORCHELASTIC_RUN_ID']} role={os.environ['ROLE_NAME']} "
      f"args={sys.argv[1:]}", flush=True)
print(f"stderr of rank {rank}", file=sys.stderr, flush=True)
dist.destroy_process_group()
'''

LINE = re.compile(r"ddp rank=(\d+) world=(\d+) local=(\d+) group=(\d+) sum=(\d+) run=(\S+) "
                  r"role=(\S+) args=(.*)$", re.M)

# Every flag of torchrun's parser (torch/distributed/run.py, PyTorch 2.x), in
# both spellings, each with a value it takes. None: a flag without a value.
TORCHRUN_FLAGS = [
    (("--nnodes",), "1"),
    (("--nproc-per-node", "--nproc_per_node"), "1"),
    (("--rdzv-backend", "--rdzv_backend"), "c10d"),
    (("--rdzv-endpoint", "--rdzv_endpoint"), "localhost:29400"),
    (("--rdzv-id", "--rdzv_id"), "run1"),
    (("--rdzv-conf", "--rdzv_conf"), "timeout=900"),
    (("--standalone",), None),
    (("--max-restarts", "--max_restarts"), "0"),
    (("--monitor-interval", "--monitor_interval"), "0.1"),
    (("--start-method", "--start_method"), "spawn"),
    (("--event-log-handler", "--event_log_handler"), "null"),
    (("--role",), "trainer"),
    (("-m", "--module"), None),
    (("--no-python", "--no_python"), None),
    (("--run-path", "--run_path"), None),
    (("--log-dir", "--log_dir"), "LOGDIR"),
    (("-r", "--redirects"), "0"),
    (("-t", "--tee"), "3"),
    (("--local-ranks-filter", "--local_ranks_filter"), "0"),
    (("--node-rank", "--node_rank"), "0"),
    (("--master-addr", "--master_addr"), "127.0.0.1"),
    (("--master-port", "--master_port"), "29500"),
    (("--local-addr", "--local_addr"), "127.0.0.1"),
    (("--logs-specs", "--logs_specs"), "default"),
    (("--numa-binding", "--numa_binding"), "node"),
    (("--signals-to-handle", "--signals_to_handle"), "SIGTERM,SIGINT"),
    (("--duplicate-stdout-filters", "--duplicate_stdout_filters"), "loss,error"),
    (("--duplicate-stderr-filters", "--duplicate_stderr_filters"), "Traceback"),
    (("--virtual-local-rank", "--virtual_local_rank"), None),
]
NO_EFFECT = ["--monitor-interval", "--start-method", "--event-log-handler", "--logs-specs",
             "--numa-binding", "--signals-to-handle", "--duplicate-stdout-filters",
             "--duplicate-stderr-filters", "--virtual-local-rank"]


def have_torch():
    return subprocess.run([TORCH_PYTHON, "-c", "import torch.distributed"],
                          capture_output=True).returncode == 0


def installed_torchrun_flags():
    """The option strings of the installed torchrun's parser, if there is one."""
    code = ("from torch.distributed.run import get_args_parser\n"
            "for a in get_args_parser()._actions:\n"
            "    print(' '.join(s for s in a.option_strings if s not in ('-h', '--help')))\n")
    r = subprocess.run([TORCH_PYTHON, "-c", code], capture_output=True, text=True)
    if r.returncode != 0:
        return None
    return {s for line in r.stdout.split() for s in line.split()}


# A DeepSpeed-era script: it parses the --local_rank=N that deepspeed (and
# torch.distributed.launch) append, and its own --deepspeed CONFIG.
DEEPSPEED_SCRIPT = r'''
import argparse, os, sys
import torch
import torch.distributed as dist
# As deepspeed and torch.distributed.launch place it: right after the script,
# so that a wrapper taking the rest with argparse.REMAINDER does not pass it on.
assert sys.argv[1].startswith("--local_rank="), sys.argv
parser = argparse.ArgumentParser()
parser.add_argument("--local_rank", type=int, required=True)
parser.add_argument("--deepspeed", required=True)
parser.add_argument("rest", nargs=argparse.REMAINDER)
args = parser.parse_args()
assert args.local_rank == int(os.environ["LOCAL_RANK"]), (args.local_rank, os.environ["LOCAL_RANK"])
assert args.rest == [], args.rest
dist.init_process_group("gloo")
t = torch.tensor([1.0])
dist.all_reduce(t)
e = os.environ
print(f"ds rank={dist.get_rank()} world={dist.get_world_size()} local_rank={args.local_rank} "
      f"config={args.deepspeed} sum={int(t.item())} cross={e['CROSS_RANK']}/{e['CROSS_SIZE']} "
      f"local_size={e['LOCAL_SIZE']} ds_env={e.get('DS_TEST_VAR', '-')}", flush=True)
dist.destroy_process_group()
'''


class TorchrunCase(harness.DlaunchTestCase):
    def setUp(self):
        super().setUp()
        self.script = self.write("train.py", DDP_SCRIPT)

    def torch_env(self, **extra):
        # The ranks' python: the script line stays torchrun's own.
        return self.env(DLAUNCH_PYTHON=TORCH_PYTHON, **extra)

    def ddp_lines(self, out):
        return {int(m[0]): m for m in LINE.findall(out)}

    def assertWorld(self, out, world, run=None, args="[]"):
        lines = self.ddp_lines(out)
        self.assertEqual(sorted(lines), list(range(world)), out)
        for rank, (_, w, _, _, total, run_id, _, shown_args) in lines.items():
            self.assertEqual(int(w), world)
            self.assertEqual(int(total), world * (world + 1) // 2)
            self.assertEqual(shown_args, args)
            if run:
                self.assertEqual(run_id, run)
        return lines


# torch's @record on main: a failing rank's exception goes to the file
# TORCHELASTIC_ERROR_FILE names; the rank also prints what torchrun sets.
RECORD_SCRIPT = r'''
import os, sys, time
from torch.distributed.elastic.multiprocessing.errors import record


def train_step(step):
    if os.environ["RANK"] == "1" and step == 3:
        # Not before rank 0 has said its line: the failure stops it.
        marks = os.environ.get("MARK_DIR")
        while marks and not os.path.exists(os.path.join(marks, "printed-0")):
            time.sleep(0.05)
        raise RuntimeError(f"boom at step {step}")


@record
def main():
    print("env", os.environ["TORCHELASTIC_USE_AGENT_STORE"],
          os.environ["TORCH_NCCL_ASYNC_ERROR_HANDLING"], flush=True)
    if os.environ.get("MARK_DIR"):
        open(os.path.join(os.environ["MARK_DIR"], "printed-" + os.environ["RANK"]), "w").close()
    for step in range(5):
        train_step(step)


main()
'''


class TestTorchrunEnvironment(TorchrunCase):
    def test_a_recorded_exception_is_the_root_cause_as_torchrun_shows_it(self):
        script = self.write("record.py", RECORD_SCRIPT)
        job = self.job_name("record")
        r = self.run_dlaunch(["--nproc-per-node", "2", "--name", job, script], cwd=self.tmp,
                             env=dict(self.torch_env(), MARK_DIR=self.tmp))
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertEqual(r.stdout.count("env False 1"), 2, r.stdout)
        block = r.stderr[r.stderr.index("the exception of rank 1 (its TORCHELASTIC_ERROR_FILE, "
                                        "torch's @record):"):]
        self.assertIn("  | Traceback (most recent call last):", block)
        self.assertIn("in train_step", block)
        self.assertIn("  | RuntimeError: boom at step 3", block)
        got = self.run_dlaunch(["get", job])
        self.assertIn("  | RuntimeError: boom at step 3", got.stdout)

    def test_the_users_own_values_win(self):
        script = self.write("record.py", RECORD_SCRIPT)
        r = self.run_dlaunch(["--nproc-per-node", "1", "-e", "TORCHELASTIC_USE_AGENT_STORE=True",
                              "-e", "TORCH_NCCL_ASYNC_ERROR_HANDLING=3", script], cwd=self.tmp,
                             env=self.torch_env())
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("env True 3", r.stdout)


class TestOneMachine(TorchrunCase):
    def test_single_node_line(self):
        # torchrun --nproc_per_node=2 train.py --lr 3e-4
        r = self.run_dlaunch(["--nproc_per_node=2", "train.py", "--lr", "3e-4"], cwd=self.tmp,
                             env=self.torch_env())
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertWorld(r.stdout, 2, args="['--lr', '3e-4']")

    def test_standalone_line_with_output_flags(self):
        # torchrun --standalone --nnodes=1 --nproc-per-node=2 train.py, with
        # torchrun's output flags: rank 0's stdout redirected, rank 1 only.
        job = self.job_name("standalone")
        r = self.run_dlaunch(["--standalone", "--nnodes=1", "--nproc-per-node=2",
                              "--rdzv-id", job, "--role", "trainer", "-r", "0:1",
                              "--monitor-interval=1", "train.py"],
                             cwd=self.tmp, env=self.torch_env())
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = self.ddp_lines(r.stdout)
        self.assertEqual(sorted(lines), [1], r.stdout)  # rank 0's stdout stays in its log
        self.assertEqual(lines[1][5], job)
        self.assertEqual(lines[1][6], "trainer")
        self.assertIn("[0] stderr of rank 0", r.stderr)
        with open(os.path.join(self.state, job, "rank-0.log")) as f:
            self.assertIn("ddp rank=0 world=2", f.read())
        self.assertEqual(r.stderr.count("torchrun's --monitor-interval has no effect: dlaunch's "
                                        "agent reacts to exits at once"), 1, r.stderr)

    def test_pass_local_rank_goes_after_the_script(self):
        # torch.distributed.launch's place: after the script, before its
        # arguments, for a Python script, a shell script and a shell's -c.
        self.write("args.py", "import sys; print('py', sys.argv[1:])\n")
        self.write("args.sh", 'echo "sh $*"\n')
        for program, want in ((["args.py", "a"], "py ['--local_rank=LR', 'a']"),
                              (["sh", "args.sh", "a"], "sh --local_rank=LR a"),
                              (["sh", "-c", 'echo "c $0 $1"', "a"], "c --local_rank=LR a")):
            r = self.run_dlaunch(["-n", "2", "--pass-local-rank", *program], cwd=self.tmp,
                                 env=self.torch_env())
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(sorted(r.stdout.splitlines()),
                             [f"[{lr}] " + want.replace("LR", str(lr)) for lr in (0, 1)])

    def test_local_ranks_filter(self):
        r = self.run_dlaunch(["--nproc_per_node=2", "--local_ranks_filter=1", "train.py"],
                             cwd=self.tmp, env=self.torch_env())
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(sorted(self.ddp_lines(r.stdout)), [1], r.stdout)
        self.assertNotIn("stderr of rank 0", r.stderr)


    def test_nproc_per_node_cpu_is_one_rank_per_cpu(self):
        r = self.run_dlaunch(["--nproc-per-node", "cpu", "--no-python", "sh", "-c",
                              "echo world=$WORLD_SIZE"])
        self.assertEqual(r.returncode, 0, r.stderr)
        cpus = os.sysconf("SC_NPROCESSORS_ONLN")
        self.assertEqual(sorted(set(re.findall(r"world=(\d+)", r.stdout))), [str(cpus)])
        self.assertEqual(r.stdout.count("world="), cpus)

    def test_nproc_per_node_auto_without_gpus_is_one_rank_per_cpu_as_torchruns(self):
        # torchrun's --nproc-per-node auto: one per GPU, else one per CPU.
        gpus = 0
        if shutil.which("nvidia-smi"):
            listed = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True)
            gpus = listed.stdout.count("GPU ") if listed.returncode == 0 else 0
        r = self.run_dlaunch(["--nproc-per-node", "auto", "--no-python", "sh", "-c",
                              "echo world=$WORLD_SIZE"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.count("world="), gpus or os.sysconf("SC_NPROCESSORS_ONLN"))
        # gpu (and no flag): one per GPU, else 1.
        r = self.run_dlaunch(["--nproc-per-node", "gpu", "--no-python", "sh", "-c",
                              "echo world=$WORLD_SIZE"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.count("world="), gpus or 1)


class TestEveryFlag(harness.DlaunchTestCase):
    def test_every_torchrun_flag_is_accepted_in_both_spellings(self):
        logdir = os.path.join(self.tmp, "logs")
        for spellings, value in TORCHRUN_FLAGS:
            for flag in spellings:
                for form in ("space", "equals") if value is not None else ("flag",):
                    v = value.replace("LOGDIR", logdir) if value else None
                    words = {"space": [flag, v], "equals": [f"{flag}={v}"],
                             "flag": [flag]}[form]
                    if form == "equals" and not flag.startswith("--"):
                        continue
                    program = ["json.tool"] if flag in ("-m", "--module") else ["/bin/true"]
                    r = self.run_dlaunch(["--dry-run"] + words + program)
                    self.assertEqual(r.returncode, 0, f"{words}: {r.stderr}")
                    base = spellings[0]
                    if base in NO_EFFECT:
                        self.assertEqual(r.stderr.count(f"torchrun's {base} has no effect: "), 1,
                                         f"{words}: {r.stderr}")

    def test_the_installed_torchruns_flags_are_all_known(self):
        flags = installed_torchrun_flags()
        if flags is None:
            self.skipTest(f"missing: torch.distributed.run for {TORCH_PYTHON} (python3-torch)")
        known = {s for spellings, _ in TORCHRUN_FLAGS for s in spellings}
        self.assertEqual(sorted(flags - known), [],
                         "flags of the installed torchrun missing from this test's list")
        # And dlaunch's own --help names them.
        r = self.run_dlaunch(["--help"])
        for flag in sorted(flags):
            self.assertIn(flag, r.stdout)


class TestNodesInNamespaces(TorchrunCase):
    """Two "nodes", each a network namespace with its own address; dlaunch runs
    in each as a user runs torchrun on each node."""

    @classmethod
    def setUpClass(cls):
        if not sshd_harness.netns_usable():
            raise unittest.SkipTest(harness.netns_reason() or "no network namespaces")
        sshd_harness.require_sshd()
        cls.hosts = sshd_harness.SshHosts(2)
        cls.hosts.__enter__()
        cls.hosts.write_known_hosts()

    @classmethod
    def tearDownClass(cls):
        cls.hosts.close()

    def on_node(self, i, args, secret="a-secret-both-nodes-share"):
        h = self.hosts.hosts[i]
        env = self.torch_env(DLAUNCH_STATE_DIR=os.path.join(self.tmp, f"state{i}"))
        env.pop("DLAUNCH_SECRET", None)
        if secret:
            env["DLAUNCH_SECRET"] = secret
        p = subprocess.Popen(["ip", "netns", "exec", h["ns"], harness.DLAUNCH] + args,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                             cwd=self.tmp)
        self.procs.append(p)
        return p

    def both(self, procs, timeout=120):
        results = []
        for p in procs:
            try:
                out, err = p.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                for q in procs:
                    q.kill()
                self.fail("a node did not finish")
            results.append((p.returncode, out, err))
        return results

    def test_static_multi_node_line(self):
        # torchrun --nnodes=2 --nproc-per-node=1 --node-rank=R --master-addr=A
        #          --master-port=29500 train.py   (on each node)
        a = self.hosts.hosts[0]["address"]
        line = ["--nnodes=2", "--nproc-per-node=1", f"--master-addr={a}",
                "--master-port=29500", "train.py"]
        nodes = [self.on_node(1, ["--node-rank=1"] + line), self.on_node(0, ["--node-rank=0"] + line)]
        (c1, out1, err1), (c0, out0, err0) = self.both(nodes)
        self.assertEqual((c0, c1), (0, 0), err0 + err1)
        self.assertWorld(out0, 2)

    def test_c10d_line_run_the_same_on_every_node(self):
        # torchrun --nnodes=2 --nproc-per-node=1 --rdzv-id=$JOB --rdzv-backend=c10d
        #          --rdzv-endpoint=$HOST_NODE_ADDR train.py   (on each node)
        a = self.hosts.hosts[0]["address"]
        job = self.job_name("c10d")
        line = ["--nnodes=2", "--nproc-per-node=1", f"--rdzv-id={job}", "--rdzv-backend=c10d",
                f"--rdzv-endpoint={a}:29400", "train.py", "--epochs", "1"]
        nodes = [self.on_node(1, line), self.on_node(0, line)]  # node 1 first: it waits
        (c1, out1, err1), (c0, out0, err0) = self.both(nodes)
        self.assertEqual((c0, c1), (0, 0), err0 + err1)
        lines = self.assertWorld(out0, 2, run=job, args="['--epochs', '1']")
        self.assertEqual({int(m[3]) for m in lines.values()}, {0, 1})  # GROUP_RANK
        self.assertIn(f"node 0 (this machine is {a})", err0)
        self.assertIn(f"joining node 0 at {a}:29400, which gives this node its rank\n", err1)
        self.assertIn("ddp rank=1 world=2", out1)

    def test_c10d_node_without_the_secret_says_where_it_comes_from(self):
        a = self.hosts.hosts[0]["address"]
        p = self.on_node(1, ["--nnodes=2", f"--rdzv-endpoint={a}", "train.py"], secret=None)
        _, err = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 2, err)
        self.assertIn("needs the job's secret", err)

    def test_deepspeed_hostfile_line_passes_local_rank(self):
        # deepspeed --hostfile=hostfile --num_gpus 2 train.py --deepspeed ds.json
        self.write("ds_train.py", DEEPSPEED_SCRIPT)
        self.write("ds.json", "{}\n")
        hostfile = self.write("hostfile", "".join(f"{h['address']} slots=4\n"
                                                  for h in self.hosts.hosts))
        r = self.run_dlaunch(["--hostfile=hostfile", "--num_gpus", "2", "ds_train.py",
                              "--deepspeed", "ds.json"], cwd=self.tmp,
                             env=self.hosts.env(DLAUNCH_PYTHON=TORCH_PYTHON,
                                                DLAUNCH_STATE_DIR=self.state))
        self.assertEqual(r.returncode, 0, r.stderr)
        found = re.findall(r"ds rank=(\d+) world=(\d+) local_rank=(\d+) config=ds.json sum=4 "
                           r"cross=(\d)/2 local_size=2 ds_env=-", r.stdout)
        self.assertEqual(sorted((int(a), int(w), int(lr), int(c)) for a, w, lr, c in found),
                         [(0, 4, 0, 0), (1, 4, 1, 0), (2, 4, 0, 1), (3, 4, 1, 1)],
                         r.stdout + r.stderr)
        self.assertIn("each rank gets --local_rank=N after its script", r.stderr)
        # --num_nodes 1: the hostfile's first host only; -H names the file as deepspeed's does.
        r = self.run_dlaunch(["-H", hostfile, "--num_nodes=1", "--num_gpus=1", "ds_train.py",
                              "--deepspeed", "ds.json"], cwd=self.tmp,
                             env=self.hosts.env(DLAUNCH_PYTHON=TORCH_PYTHON,
                                                DLAUNCH_STATE_DIR=self.state))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(len(re.findall(r"ds rank=0 world=1 local_rank=0", r.stdout)), 1,
                         r.stdout)

    def test_deepspeed_line_by_its_program_reads_deepspeed_env(self):
        # No flag of deepspeed's: a hostfile line whose program takes
        # --deepspeed is deepspeed's line all the same, and reads
        # .deepspeed_env as deepspeed does (the current directory's here).
        self.write("ds_train.py", DEEPSPEED_SCRIPT)
        self.write("ds.json", "{}\n")
        self.write(".deepspeed_env", "DS_TEST_VAR=from-file\n")
        self.write("hostfile", "".join(f"{h['address']} slots=1\n" for h in self.hosts.hosts))
        r = self.run_dlaunch(["--hostfile=hostfile", "ds_train.py", "--deepspeed", "ds.json"],
                             cwd=self.tmp, env=self.hosts.env(DLAUNCH_PYTHON=TORCH_PYTHON,
                                                              DLAUNCH_STATE_DIR=self.state))
        self.assertEqual(r.returncode, 0, r.stderr)
        found = re.findall(r"ds rank=(\d) world=2 local_rank=0 config=ds.json sum=2 "
                           r"cross=(\d)/2 local_size=1 ds_env=from-file", r.stdout)
        self.assertEqual(sorted(found), [("0", "0"), ("1", "1")], r.stdout + r.stderr)
        self.assertIn("read 1 variable for every rank from " +
                      os.path.join(self.tmp, ".deepspeed_env") + " (deepspeed's)", r.stderr)
        # A line in it without '=' is refused with its file and line.
        self.write(".deepspeed_env", "DS_TEST_VAR=from-file\nNOEQUALS\n")
        r = self.run_dlaunch(["--hostfile=hostfile", "ds_train.py", "--deepspeed", "ds.json"],
                             cwd=self.tmp, env=self.hosts.env(DLAUNCH_STATE_DIR=self.state))
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn(os.path.join(self.tmp, ".deepspeed_env") + ":2", r.stderr)

    def test_each_hosts_python_runs_the_script_and_check_reports_it(self):
        # The hosts file names the Python with torch for h1; h2's login finds
        # python3 on its PATH; no --python or DLAUNCH_PYTHON.
        hosts = self.hosts.hosts_file(slots=[1, 1], host_extra={"h1": f'python = "{TORCH_PYTHON}"'})
        env = self.hosts.env(DLAUNCH_STATE_DIR=self.state)
        env.pop("DLAUNCH_PYTHON", None)
        r = self.run_dlaunch(["--hosts", hosts, "--dry-run", "-v", "train.py"], env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(f"python: {TORCH_PYTHON} (the hosts file's python)", r.stdout)
        self.assertIn("python: python3 (the first on the PATH of the ranks there)", r.stdout)
        r = self.run_dlaunch(["check", "--hosts", hosts, "--json"], env=env, timeout=180)
        doc = json.loads(r.stdout)
        rows = {row["name"]: row for row in doc["hosts"]}
        self.assertEqual(rows["h1"]["python_path"], TORCH_PYTHON, rows["h1"])
        self.assertTrue(rows["h1"]["torch"], rows["h1"])  # what the job's ranks will import
        # --python names one that is not there: check says so instead of a version.
        r = self.run_dlaunch(["check", "--hosts", hosts, "--json", "--python", "/nonexistent/py"],
                             env=env, timeout=180)
        doc = json.loads(r.stdout)
        self.assertEqual([row["python"] for row in doc["hosts"]], ["", ""], r.stdout)
        hosts_all = self.hosts.hosts_file(
            slots=[1, 1], name="all.toml",
            extra=f'[defaults]\npython = "{TORCH_PYTHON}"\n')
        r = self.run_dlaunch(["--hosts", hosts_all, "--nproc_per_node=1", "train.py"],
                             cwd=self.tmp, env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertWorld(r.stdout, 2)
        self.assertRegex(r.stdout, r"\[h1:0\] ddp rank=0")

    def test_ssh_hosts_with_torchrun_flags(self):
        hosts = self.hosts.hosts_file(slots=[1, 1])
        job = self.job_name("ssh")
        r = self.run_dlaunch(["--hosts", hosts, "--rdzv-id", job, "--nproc_per_node=1",
                              "--max_restarts=0", "train.py"], cwd=self.tmp,
                             env=self.hosts.env(DLAUNCH_PYTHON=TORCH_PYTHON,
                                                DLAUNCH_STATE_DIR=self.state))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertWorld(r.stdout, 2, run=job)
        self.assertRegex(r.stdout, r"\[h1:0\] ddp rank=0")
        self.assertRegex(r.stdout, r"\[h2:1\] ddp rank=1")


if __name__ == "__main__":
    harness.require_binaries()
    if not have_torch():
        harness.skip_file(f"missing: torch for {TORCH_PYTHON} (python3-torch)")
    harness.main(verbosity=2)
