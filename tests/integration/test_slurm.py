"""dlaunch on a real Slurm cluster (issue 14): `dlaunch --launcher slurm` in a
batch job starts its agents as one srun step, the ranks see the torchrun
environment on each node, every rank's log lands in the state dir, a rank's
exit code becomes the job's, and `scancel` leaves nothing of the job behind.

The cluster is Debian's slurm-wlm with munge, started by this test as root and
stopped on teardown (also on failure and SIGTERM):

    namespace dls<pid>-ctl: bridge br0 198.18.0.1/24, slurmctld, munge's clients
      +-- veth -- namespace dls<pid>-n1: eth0 198.18.0.11, host name n1, slurmd -N n1
      +-- veth -- namespace dls<pid>-n2: eth0 198.18.0.12, host name n2, slurmd -N n2

Each slurmd has its own network and UTS namespace, and a mount namespace in
which /etc/hosts names the three machines; the file system is otherwise shared,
as on a cluster with a shared home. One munged (its own socket and key in the
temp dir) serves all of them. The addresses are inside namespaces this test
made, so parallel runs and other tests cannot collide with them.

Skips (exit 77) when not root, when slurm-wlm or munge is not installed, when
network namespaces do not work, or when the daemons do not come up (the end of
their logs says why)."""

import functools
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import netns_topology  # noqa: E402

PREFIX = "dls"
NODES = [("n1", "198.18.0.11"), ("n2", "198.18.0.12")]
CTL_ADDR = "198.18.0.1"
TOOLS = ["slurmctld", "slurmd", "srun", "sbatch", "salloc", "scancel", "squeue", "sinfo", "munged",
         "nsenter", "unshare", "ip"]
TMP_PREFIX = "dlaunch-slurm-"


def skip(why):
    harness.skip_file(why)


# The namespace helpers the cross-region topology uses; commands here get 30 s.
sh = functools.partial(netns_topology.sh, timeout=30)
alive = netns_topology.alive
kill_netns = netns_topology.kill_netns


def remove_stale():
    """Namespaces and temp dirs of a run whose process is gone."""
    for line in sh("ip", "netns", "list", check=False).stdout.splitlines():
        m = re.match(rf"({PREFIX}(\d+)-\S+)", line)
        if m and not alive(int(m.group(2))):
            kill_netns(m.group(1))
    tmp = tempfile.gettempdir()
    for entry in os.listdir(tmp):
        m = re.match(rf"{TMP_PREFIX}(\d+)-", entry)
        if m and not alive(int(m.group(1))):
            shutil.rmtree(os.path.join(tmp, entry), ignore_errors=True)


def tail(path, n=8):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-n:])
    except OSError as e:
        return f"({e})"


class SlurmCluster:
    """Two slurmd nodes and a slurmctld, each in namespaces of its own."""

    def __init__(self):
        self.pid = os.getpid()
        self.tmp = tempfile.mkdtemp(prefix=f"{TMP_PREFIX}{self.pid}-")
        os.chmod(self.tmp, 0o755)
        self.conf = os.path.join(self.tmp, "slurm.conf")
        self.namespaces = []
        self.procs = {}

    def ns(self, name):
        return f"{PREFIX}{self.pid}-{name}"

    def path(self, *parts):
        return os.path.join(self.tmp, *parts)

    # -- bring-up ---------------------------------------------------------------
    def start(self):
        remove_stale()
        for d in ("state", "log", "munge", "spool/n1", "spool/n2"):
            os.makedirs(self.path(d), exist_ok=True)
        os.chmod(self.path("munge"), 0o700)
        self._start_munge()
        self._network()
        self._write_config()
        self._start_daemons()
        self._wait_idle()

    def _start_munge(self):
        key = self.path("munge", "key")
        with open(key, "wb") as f:
            f.write(os.urandom(1024))
        os.chmod(key, 0o600)
        self.munge_socket = self.path("munge", "sock")
        r = sh("munged", f"--socket={self.munge_socket}", f"--key-file={key}",
               f"--pid-file={self.path('munge', 'pid')}", f"--log-file={self.path('munge', 'log')}",
               f"--seed-file={self.path('munge', 'seed')}", "--force", check=False)
        if r.returncode != 0:
            raise SetupFailed(f"munged would not start: {r.stderr.strip()} "
                              f"{tail(self.path('munge', 'log'), 3)}")

    def _add_ns(self, name):
        ns = self.ns(name)
        sh("ip", "netns", "add", ns)
        self.namespaces.append(ns)
        sh("ip", "-n", ns, "link", "set", "lo", "up")
        return ns

    def _network(self):
        ctl = self._add_ns("ctl")
        sh("ip", "-n", ctl, "link", "add", "br0", "type", "bridge")
        sh("ip", "-n", ctl, "addr", "add", f"{CTL_ADDR}/24", "dev", "br0")
        sh("ip", "-n", ctl, "link", "set", "br0", "up")
        for name, addr in NODES:
            ns = self._add_ns(name)
            sh("ip", "-n", ns, "link", "add", "eth0", "type", "veth", "peer", "name",
               f"p{name}", "netns", ctl)
            sh("ip", "-n", ctl, "link", "set", f"p{name}", "master", "br0", "up")
            sh("ip", "-n", ns, "addr", "add", f"{addr}/24", "dev", "eth0")
            sh("ip", "-n", ns, "link", "set", "eth0", "up")
        with open(self.path("hosts"), "w") as f:
            f.write(f"127.0.0.1 localhost\n{CTL_ADDR} ctl\n")
            for name, addr in NODES:
                f.write(f"{addr} {name}\n")

    def _write_config(self):
        t = self.tmp
        nodes = "\n".join(f"NodeName={n} NodeAddr={a} CPUs={os.cpu_count() or 1} State=UNKNOWN"
                          for n, a in NODES)
        with open(self.conf, "w") as f:
            f.write(f"""ClusterName=dltest
SlurmctldHost=ctl({CTL_ADDR})
AuthType=auth/munge
AuthInfo=socket={self.munge_socket}
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation={t}/state
SlurmdSpoolDir={t}/spool/%n
SlurmctldPidFile={t}/slurmctld.pid
SlurmdPidFile={t}/slurmd.%n.pid
SlurmctldLogFile={t}/log/slurmctld.log
SlurmdLogFile={t}/log/slurmd.%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
KillWait=5
InactiveLimit=0
{nodes}
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
""")
        # An empty cgroup.conf: the plugins above use no cgroup.
        open(self.path("cgroup.conf"), "w").close()

    def _spawn(self, name, ns, hostname, command):
        """`command` in network namespace `ns`, with a UTS namespace named
        `hostname` and a mount namespace whose /etc/hosts is ours."""
        script = (f"mount --bind {self.path('hosts')} /etc/hosts && hostname {hostname} && "
                  f"exec {command}")
        log = open(self.path("log", f"{name}.out"), "a")
        self.procs[name] = subprocess.Popen(
            ["nsenter", f"--net=/run/netns/{ns}", "unshare", "-u", "-m", "--propagation",
             "private", "sh", "-c", script],
            stdout=log, stderr=subprocess.STDOUT, env=self.env(), start_new_session=True)
        log.close()

    def _start_daemons(self):
        self._spawn("slurmctld", self.ns("ctl"), "ctl", f"slurmctld -D -i -f {self.conf}")
        for name, _ in NODES:
            self._spawn(f"slurmd-{name}", self.ns(name), name,
                        f"slurmd -D -N {name} -f {self.conf}")

    def _wait_idle(self, timeout=30):
        deadline = time.monotonic() + timeout
        state = ""
        while time.monotonic() < deadline:
            for name, proc in self.procs.items():
                if proc.poll() is not None:
                    raise SetupFailed(f"{name} exited with {proc.returncode}: "
                                      f"{tail(self.path('log', name + '.out'))}")
            r = self.client(["sinfo", "-h", "-N", "-o", "%N %t"], check=False)
            state = r.stdout.strip()
            if r.returncode == 0 and state.count("idle") == len(NODES):
                return
            time.sleep(0.5)
        raise SetupFailed(f"the nodes are not idle after {timeout} s (sinfo: {state!r}); "
                          f"slurmctld.log: {tail(self.path('log', 'slurmctld.log'))}"
                          f"slurmd n1: {tail(self.path('log', 'slurmd.n1.log'))}")

    # -- use ----------------------------------------------------------------------
    def env(self, **extra):
        env = dict(os.environ)
        for k in list(env):
            if k.startswith("SLURM_"):
                del env[k]
        env["SLURM_CONF"] = self.conf
        env.update(extra)
        return env

    def client(self, argv, env=None, check=True, timeout=30):
        """A Slurm command run from the controller's namespace (a login node,
        whose /etc/hosts names the nodes)."""
        script = f"mount --bind {self.path('hosts')} /etc/hosts && exec \"$@\""
        return sh("nsenter", f"--net=/run/netns/{self.ns('ctl')}", "unshare", "-m",
                  "--propagation", "private", "sh", "-c", script, "sh", *argv, check=check,
                  timeout=timeout, env=env or self.env())

    def node_pids(self, name):
        return [int(p) for p in
                sh("ip", "netns", "pids", self.ns(name), check=False).stdout.split()]

    # -- tear-down ----------------------------------------------------------------
    def close(self):
        for proc in self.procs.values():
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGTERM)
                except OSError:
                    pass
        deadline = time.monotonic() + 5
        for proc in self.procs.values():
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        for ns in reversed(self.namespaces):
            kill_netns(ns)  # what a daemon left (steps, agents, ranks) goes too
        self.namespaces = []
        try:
            with open(self.path("munge", "pid")) as f:
                os.kill(int(f.read().strip()), signal.SIGTERM)
        except (OSError, ValueError):
            pass
        if os.environ.get("DLAUNCH_KEEP_SLURM_LOGS"):
            print(f"Slurm logs kept in {self.tmp}")
        else:
            shutil.rmtree(self.tmp, ignore_errors=True)


class SetupFailed(Exception):
    pass


CLUSTER = None


def setUpModule():
    global CLUSTER
    if os.geteuid() != 0:
        skip("not root: a Slurm cluster needs network namespaces and slurmd as root")
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if missing:
        skip(f"missing: {', '.join(missing)} (slurm-wlm munge util-linux iproute2)")
    harness.require_binaries()
    probe = f"{PREFIX}{os.getpid()}-probe"
    added = sh("ip", "netns", "add", probe, check=False)
    if added.returncode != 0:
        skip(f"no network namespaces: `ip netns add` failed: {added.stderr.strip()}")
    sh("ip", "netns", "del", probe, check=False)
    CLUSTER = SlurmCluster()
    signal.signal(signal.SIGTERM, lambda *_: (CLUSTER.close(), os._exit(143)))
    try:
        CLUSTER.start()
    except (SetupFailed, RuntimeError, subprocess.TimeoutExpired) as e:
        CLUSTER.close()
        skip(f"Slurm did not start: the test cluster's daemons failed: {e}")


def tearDownModule():
    if CLUSTER is not None:
        CLUSTER.close()


class SlurmTest(harness.DlaunchTestCase):
    def setUp(self):
        super().setUp()
        os.chmod(self.tmp, 0o755)
        self.env_ = CLUSTER.env(DLAUNCH_STATE_DIR=self.state)

    def tearDown(self):
        # Nothing of this test's jobs may outlive it, whatever happened.
        r = CLUSTER.client(["squeue", "-h", "-o", "%i"], check=False)
        for job_id in r.stdout.split():
            CLUSTER.client(["scancel", job_id], check=False)
        super().tearDown()

    def batch_script(self, name, dlaunch_args, after=""):
        """A batch script running dlaunch with `dlaunch_args` (shell words,
        quoted here) that writes dlaunch's exit code to <name>.code."""
        words = " ".join("'" + a.replace("'", "'\\''") + "'" for a in dlaunch_args)
        code = os.path.join(self.tmp, f"{name}.code")
        # A trap (not an ignore, which dlaunch would inherit) keeps the script
        # alive after scancel's SIGTERM long enough to record dlaunch's code.
        return self.write(f"{name}.sh", f"""#!/bin/sh
trap 'echo batch script got SIGTERM' TERM
'{harness.DLAUNCH}' {words}
echo $? > '{code}'
{after}
""", 0o755), code

    def sbatch(self, script, name, wait=True, timeout=90):
        out = os.path.join(self.tmp, f"{name}.out")
        argv = ["sbatch", "--parsable", "--nodes=2", "--ntasks-per-node=1", f"--output={out}",
                f"--chdir={self.tmp}"]
        if wait:
            argv.append("--wait")
        r = CLUSTER.client(argv + [script], env=self.env_, check=False, timeout=timeout)
        return r, out

    def read(self, path):
        with open(path, errors="replace") as f:
            return f.read()

    def test_ranks_logs_and_exit_code_through_srun(self):
        job = self.job_name("slurm-ok")
        script, code = self.batch_script("ok", [
            "--launcher", "slurm", "--name", job, "--", "sh", "-c",
            'echo "rank $RANK of $WORLD_SIZE on $(hostname) step $SLURM_JOB_ID.$SLURM_STEP_ID '
            'master $MASTER_ADDR:$MASTER_PORT procid=${SLURM_PROCID-unset} '
            'ntasks=${SLURM_NTASKS-unset}"'])
        r, out = self.sbatch(script, "ok")
        output = self.read(out) if os.path.exists(out) else "(no output file)"
        print(output)
        self.assertEqual(r.returncode, 0, f"sbatch: {r.stderr}\n{output}")
        job_id = r.stdout.strip().split(";")[0]
        self.assertEqual(self.read(code).strip(), "0", output)
        # Each rank ran on its own node, as a task of the job's first srun step.
        for rank, node in ((0, "n1"), (1, "n2")):
            line = f"rank {rank} of 2 on {node} step {job_id}.0 master "
            self.assertIn(line, output)
            # The agent's own task variables are not the rank's: a library
            # that reads SLURM_PROCID (Lightning) would take the wrong rank.
            self.assertRegex(output, rf"rank {rank} of 2 on {node} .* procid=unset ntasks=unset")
            with open(os.path.join(self.state, job, f"rank-{rank}.log")) as f:
                self.assertIn(line, f.read())
        self.assertNothingLeft(job)

    def test_check_inside_an_allocation_reaches_every_node_by_name(self):
        script, code = self.batch_script("check", ["check", "--launcher", "slurm",
                                                   "--matrix-seconds", "1"])
        r, out = self.sbatch(script, "check")
        output = self.read(out) if os.path.exists(out) else "(no output file)"
        print(output)
        self.assertEqual(r.returncode, 0, f"sbatch: {r.stderr}\n{output}")
        # Both nodes answered, and each reached the other by its Slurm name.
        self.assertEqual(self.read(code).strip(), "0", output)
        self.assertIn("a job can launch on these 2 hosts", output)
        self.assertNotIn("not a numeric address", output)

    def test_a_rank_exit_code_is_the_jobs_and_the_others_keep_their_grace(self):
        job = self.job_name("slurm-fail")
        script, code = self.batch_script("fail", [
            "--launcher", "slurm", "--name", job, "--", "sh", "-c",
            'if [ "$RANK" = 1 ]; then sleep 1; echo "rank 1 fails on $(hostname)" >&2; exit 3; fi; '
            'trap "echo rank 0 saving; sleep 2; echo rank 0 saved; exit 0" TERM; '
            'sleep 300 & wait'])
        # Rank 0 never ends by itself within sbatch's 90 s: only a stop does it.
        r, out = self.sbatch(script, "fail")
        output = self.read(out)
        print(output)
        self.assertEqual(self.read(code).strip(), "3", output)
        self.assertIn("rank 1 fails on n2", output)
        # The failure stopped rank 0 (its SIGTERM trap ran), after the failure
        # and because of it, and Slurm did not kill its agent when n2's agent
        # exited 3: rank 0 had its grace and saved.
        failed = output.find(f"job {job} failed: rank 1 on n2 exited with code 3\n")
        saving = output.find("[n1:0] rank 0 saving\n")
        saved = output.find("[n1:0] rank 0 saved\n")
        self.assertTrue(0 <= failed < saving < saved, output)
        with open(os.path.join(self.state, job, "rank-0.log")) as f:
            self.assertEqual(f.read(), "rank 0 saving\nrank 0 saved\n")
        self.assertNothingLeft(job)

    def test_a_spare_node_takes_over_when_an_agent_dies(self):
        # n2 is the spare; n1's agent is killed while round 0 runs. The step
        # (srun --kill-on-bad-exit=0 --no-kill) goes on without n1's task,
        # and round 1 runs on n2 as node 0.
        job = self.job_name("slurm-spare")
        script, code = self.batch_script("spare", [
            "--launcher", "slurm", "--name", job, "--spares", "1", "--max-restarts", "2",
            "--grace", "2", "--", "sh", "-c",
            'echo "round $TORCHELASTIC_RESTART_COUNT rank $RANK on $(hostname) '
            'master $MASTER_ADDR"; [ "$TORCHELASTIC_RESTART_COUNT" != 0 ] || exec sleep 300; '
            'sleep 5; echo "round $TORCHELASTIC_RESTART_COUNT done"'])
        r, out = self.sbatch(script, "spare", wait=False)
        self.assertEqual(r.returncode, 0, r.stderr)
        ran = harness.wait_for(lambda: any(harness.exe_name(p) == "sleep"
                                           for p in harness.processes_with_marker(job)), 30)
        if not ran:
            self.fail(f"round 0 never started: {self.read(out) if os.path.exists(out) else ''}")
        # The agent: the rank's parent (not its guardian).
        rank = [p for p in harness.processes_with_marker(job) if harness.exe_name(p) == "sleep"]
        agent = harness.parent_of(rank[0])
        self.assertEqual(harness.exe_name(agent), "dlaunch-agent")
        self.assertIn(agent, CLUSTER.node_pids("n1"))
        os.kill(agent, signal.SIGKILL)
        self.assertTrue(harness.wait_for(lambda: os.path.exists(code), 60), "the job never ended")
        output = self.read(out)
        print(output)
        self.assertEqual(self.read(code).strip(), "0", output)
        self.assertIn("round 0 rank 0 on n1", output)
        self.assertRegex(output, r"lost the agent of n1: .*; a new round without it")
        self.assertRegex(output, r"n2 takes node 0 of n1")
        self.assertRegex(output, r"round 1 rank 0 on n2 master \S+")
        # Round 1 outlived n1's task: Slurm did not end the step with it.
        self.assertIn("[n2:0] round 1 done", output)
        self.assertNothingLeft(job)

    def test_fake_srun_does_what_srun_does_where_dlaunch_relies_on_it(self):
        # One step, the transport's srun line (srun_argv.h), run by the real
        # srun and by fake_srun.py (test_check_scale's 2,000 "nodes"): each
        # task finds its own launch spec among others on stdin (--input=all),
        # its lines come labelled (--label), task 1's failure is said, and it
        # ends the step: SIGTERM to task 0 (--kill-on-bad-exit=1).
        specs = os.path.join(self.tmp, "specs.bin")
        with open(specs, "wb") as f:
            for name, _ in NODES:
                f.write(struct.pack(">II", 0x444C5350, len(name)) + name.encode())
        task = self.write("task.py", r"""
import os, struct, sys, time
data, bodies, at = sys.stdin.buffer.read(), [], 0
while at + 8 <= len(data):
    n = struct.unpack_from(">II", data, at)[1]
    bodies.append(data[at + 8:at + 8 + n].decode())
    at += 8 + n
me = os.environ["SLURMD_NODENAME"]
print(f"{me} found its spec: {me in bodies}", flush=True)
print(f"{me} on stderr", file=sys.stderr, flush=True)
printed = os.path.join(sys.argv[1], "task-0-printed")
if os.environ["SLURM_PROCID"] == "1":
    # Only once task 0's line is out: the step's kill would race it.
    for _ in range(600):
        if os.path.exists(printed):
            break
        time.sleep(0.05)
    sys.exit(3)
open(printed + ".tmp", "w").close()
os.rename(printed + ".tmp", printed)
time.sleep(60)
print(f"{me} survived", flush=True)
""")
        def step(marks):  # where task 0 says it has printed, one per run
            os.makedirs(marks)
            return ["--nodes=2", "--ntasks=2", "--ntasks-per-node=1",
                    "--nodelist=" + ",".join(n for n, _ in NODES), "--kill-on-bad-exit=1",
                    "--wait=0", "--input=all", "--label", "--unbuffered", "--mpi=none",
                    "--job-name=fake-vs-real", "/usr/bin/python3", task, marks]
        real = CLUSTER.client(["sh", "-c", 'exec srun "$@" < "$0" 2>&1', specs,
                               *step(os.path.join(self.tmp, "real"))],
                              env=self.env_, check=False, timeout=60)
        fake_srun = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fake_srun.py")
        with open(specs, "rb") as f:  # through a pipe, as the transport writes them
            fake = subprocess.run(["/usr/bin/python3", fake_srun,
                                   *step(os.path.join(self.tmp, "fake"))], input=f.read(),
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
        fake.stdout = fake.stdout.decode()
        for name, r in (("srun", real), ("fake_srun.py", fake)):
            with self.subTest(name):
                out = r.stdout
                print(f"{name} (exit {r.returncode}):\n{out}\nstderr:\n{r.stderr}")
                self.assertNotEqual(r.returncode, 0)
                # stderr: labelled when it comes; srun may lose a task's
                # stderr lines at a step's kill or pass them on after its end.
                for line in out.splitlines():
                    if "on stderr" in line:
                        task, node = re.fullmatch(r"(\d): (n\d) on stderr", line).groups()
                        self.assertEqual(NODES[int(task)][0], node)
                for line in ["0: n1 found its spec: True", "1: n2 found its spec: True",
                             "srun: error: n2: task 1: Exited with exit code 3",
                             "srun: error: n1: task 0: Terminated"]:  # --kill-on-bad-exit
                    self.assertIn(line + "\n", out)
                self.assertNotIn("survived", out)

    def test_salloc_from_a_login_node(self):
        # The coordinator outside the allocation (salloc runs its command
        # here): both nodes' agents reach it across the network.
        job = self.job_name("slurm-salloc")
        r = CLUSTER.client(["salloc", "--nodes=2", "--ntasks-per-node=1", harness.DLAUNCH,
                            "--name", job, "--", "sh", "-c", 'echo "rank $RANK on $(hostname)"'],
                           env=self.env_, check=False, timeout=60)
        print(r.stdout + r.stderr)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("[n1:0] rank 0 on n1", r.stdout)
        self.assertIn("[n2:1] rank 1 on n2", r.stdout)
        self.assertNothingLeft(job)

    def test_scancel_leaves_nothing_behind(self):
        job = self.job_name("slurm-cancel")
        script, code = self.batch_script("cancel", [
            "--launcher", "slurm", "--name", job, "--", "sleep", "300"])
        r, out = self.sbatch(script, "cancel", wait=False)
        self.assertEqual(r.returncode, 0, r.stderr)
        job_id = r.stdout.strip().split(";")[0]
        running = harness.wait_for(lambda: len(harness.processes_with_marker(job)) == 2,
                                   timeout=30)
        if not running:
            self.fail(f"ranks never started: {self.read(out) if os.path.exists(out) else ''}")
        ranks = harness.processes_with_marker(job)
        agents = [p for p in CLUSTER.node_pids("n1") + CLUSTER.node_pids("n2")
                  if harness.exe_name(p) == "dlaunch-agent"]
        self.assertTrue(agents, "no dlaunch-agent in the nodes' namespaces")
        started = time.monotonic()
        CLUSTER.client(["scancel", job_id])
        left = harness.wait_no_marker(job, timeout=20)
        self.assertEqual(left, [], f"ranks left after scancel: {left}")
        gone = harness.wait_for(lambda: not any(alive(p) for p in agents + ranks), timeout=20)
        self.assertTrue(gone, "agents left after scancel")
        harness.wait_for(lambda: os.path.exists(code), timeout=20)
        output = self.read(out)
        print(output)
        print(f"everything gone {time.monotonic() - started:.1f} s after scancel")
        self.assertEqual(self.read(code).strip(), "143", output)
        # Nothing of the job in the nodes' namespaces: srun, the coordinator,
        # agents and ranks are all gone.
        job_exes = ("srun", "dlaunch", "dlaunch-agent", "sleep")

        def leftovers():
            return [(name, harness.exe_name(p)) for name, _ in NODES
                    for p in CLUSTER.node_pids(name) if harness.exe_name(p) in job_exes]

        harness.wait_for(lambda: not leftovers(), timeout=15)
        self.assertEqual(leftovers(), [])


if __name__ == "__main__":
    harness.main(verbosity=2)
