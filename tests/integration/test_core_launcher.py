"""The core launcher end to end on one machine: real dlaunch, dlaunch-agent and
rank processes. Covers the env contract, manual mode with three dlaunch
processes, a hosts file with two local hosts, exit codes, logs and cleanup."""

import json
import os
import signal
import socket
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import DlaunchTestCase, connectable, free_port  # noqa: E402

ENV_KEYS = ["RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK",
            "GROUP_WORLD_SIZE", "ROLE_RANK", "ROLE_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
            "TORCHELASTIC_RESTART_COUNT", "TORCHELASTIC_MAX_RESTARTS", "TORCHELASTIC_RUN_ID",
            "DLAUNCH_JOB", "DLAUNCH_HOST", "OMP_NUM_THREADS"]

# A rank that records its environment in <dir>/rank-<RANK>.json.
DUMP_ENV = ("import json, os, sys; keys = sys.argv[2].split(','); "
            "d = {k: os.environ.get(k) for k in keys}; "
            "open(os.path.join(sys.argv[1], 'rank-%s.json' % os.environ['RANK']), 'w')"
            ".write(json.dumps(d)); print('rank', os.environ['RANK'], 'ok')")


def process_state(pid):
    """R, S, T, ... from /proc/PID/stat; None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


class CoreLauncherTest(DlaunchTestCase):
    def dump_cmd(self, out_dir):
        os.makedirs(out_dir, exist_ok=True)
        return [sys.executable, "-c", DUMP_ENV, out_dir, ",".join(ENV_KEYS)]

    def read_envs(self, out_dir):
        envs = {}
        for name in os.listdir(out_dir):
            with open(os.path.join(out_dir, name)) as f:
                d = json.load(f)
            envs[int(d["RANK"])] = d
        return envs

    def test_standalone_env_contract_for_four_ranks(self):
        job = self.job_name("env")
        out = os.path.join(self.tmp, "env")
        r = self.run_dlaunch(["--nproc-per-node", "4", "--name", job, "--"] + self.dump_cmd(out))
        self.assertEqual(r.returncode, 0, r.stderr)
        envs = self.read_envs(out)
        self.assertEqual(sorted(envs), [0, 1, 2, 3])
        ports = {e["MASTER_PORT"] for e in envs.values()}
        self.assertEqual(len(ports), 1)
        for rank, e in envs.items():
            for k in ENV_KEYS:
                self.assertIsNotNone(e[k], f"rank {rank} lacks {k}")
            self.assertEqual(e["LOCAL_RANK"], str(rank))
            self.assertEqual(e["WORLD_SIZE"], "4")
            self.assertEqual(e["LOCAL_WORLD_SIZE"], "4")
            self.assertEqual(e["GROUP_RANK"], "0")
            self.assertEqual(e["GROUP_WORLD_SIZE"], "1")
            self.assertEqual(e["ROLE_RANK"], str(rank))
            self.assertEqual(e["MASTER_ADDR"], "127.0.0.1")
            self.assertEqual(e["TORCHELASTIC_RESTART_COUNT"], "0")
            self.assertEqual(e["TORCHELASTIC_MAX_RESTARTS"], "0")
            self.assertEqual(e["TORCHELASTIC_RUN_ID"], job)
            self.assertEqual(e["DLAUNCH_JOB"], job)
            self.assertEqual(e["OMP_NUM_THREADS"], "1")
        port = int(ports.pop())
        self.assertTrue(1024 <= port <= 65535)
        for rank in range(4):
            self.assertIn(f"[{rank}] rank {rank} ok", r.stdout)
        # every line reaches the terminal once, and the rank's file raw
        self.assertEqual(r.stdout.count("ok\n"), 4)
        with open(os.path.join(self.state, job, "rank-2.log")) as f:
            self.assertEqual(f.read(), "rank 2 ok\n")
        self.assertEqual(os.stat(os.path.join(self.state, job)).st_mode & 0o777, 0o700)
        self.assertEqual(os.stat(os.path.join(self.state, job, "rank-2.log")).st_mode & 0o777, 0o600)

    def test_master_port_flag_and_user_omp_threads_win(self):
        out = os.path.join(self.tmp, "env")
        port = free_port()
        r = self.run_dlaunch(["-n", "2", "--master-port", str(port), "--"] + self.dump_cmd(out),
                             env=self.env(OMP_NUM_THREADS="3"))
        self.assertEqual(r.returncode, 0, r.stderr)
        envs = self.read_envs(out)
        self.assertEqual({e["MASTER_PORT"] for e in envs.values()}, {str(port)})
        self.assertEqual({e["OMP_NUM_THREADS"] for e in envs.values()}, {"3"})

    def test_master_port_in_use_on_node_0_is_refused_before_any_rank_starts(self):
        # Rank 0 would die of EADDRINUSE once every rank had started.
        hosts = self.write("hosts.toml", '[[host]]\nname = "alpha"\naddress = "127.0.0.1"\n'
                           'slots = 1\n[[host]]\nname = "beta"\naddress = "localhost"\n')
        with socket.socket() as holder:
            holder.bind(("0.0.0.0", 0))
            holder.listen()
            port = holder.getsockname()[1]
            for where in (["-n", "2"], ["--hosts", hosts]):
                r = self.run_dlaunch(where + ["--master-port", str(port), "--", "sh", "-c",
                                              "echo rank $RANK started"])
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertNotIn("started", r.stdout + r.stderr)
                self.assertIn(f"--master-port {port} cannot be used", r.stderr)
                self.assertIn(f"port {port} is held by pid {os.getpid()}", r.stderr)

    def test_manual_mode_three_nodes_uneven(self):
        rdzv = free_port()
        secret = self.write("secret", "s3cr3t-shared\n", 0o600)
        job_out = os.path.join(self.tmp, "manual")
        procs = []
        for node, nproc in [(2, 3), (1, 1), (0, 2)]:  # node 0 last: others must wait for it
            procs.append(self.start_dlaunch(
                ["--nnodes", "3", "--node-rank" if node != 1 else "--rank", str(node),
                 "--master-addr", "127.0.0.1", "--rdzv-port", str(rdzv),
                 "--nproc-per-node", str(nproc), "--secret-file", secret, "--"]
                + self.dump_cmd(job_out)))
            if node == 2:
                time.sleep(0.5)
        outs = [p.communicate(timeout=120) for p in procs]
        for p, (o, e) in zip(procs, outs):
            self.assertEqual(p.returncode, 0, e)
        envs = self.read_envs(job_out)
        self.assertEqual(sorted(envs), list(range(6)))
        self.assertEqual(len({(e["MASTER_ADDR"], e["MASTER_PORT"]) for e in envs.values()}), 1)
        self.assertEqual({e["WORLD_SIZE"] for e in envs.values()}, {"6"})
        self.assertEqual(len({e["TORCHELASTIC_RUN_ID"] for e in envs.values()}), 1)
        # contiguous per node, in node-rank order
        self.assertEqual([envs[r]["GROUP_RANK"] for r in range(6)], ["0", "0", "1", "2", "2", "2"])
        self.assertEqual([envs[r]["LOCAL_RANK"] for r in range(6)], ["0", "1", "0", "0", "1", "2"])
        node0_out, node2_out = outs[2][0], outs[0][0]
        for rank in range(6):
            self.assertIn(f"rank {rank} ok", node0_out)  # node 0 shows everyone
        for rank in (3, 4, 5):
            self.assertIn(f"[{rank}] rank {rank} ok", node2_out)  # each node its own
        self.assertNotIn("rank 0 ok", node2_out)

    def test_manual_mode_ctrl_c_on_node_0_is_a_stop_on_the_others(self):
        rdzv = free_port()
        secret = self.write("secret", "s3cr3t-shared\n", 0o600)
        job = self.job_name("ctrlc")
        line = ["--nnodes", "2", "--master-addr", "127.0.0.1", "--rdzv-port", str(rdzv),
                "--rdzv-id", job, "--secret-file", secret, "--", "sh", "-c",
                'echo "up $RANK"; exec sleep 300']
        node1 = self.start_dlaunch(["--node-rank", "1"] + line)
        node0 = self.start_dlaunch(["--node-rank", "0"] + line)
        self.assertTrue(harness.wait_for(lambda: len(harness.processes_with_marker(job)) >= 2, 60))
        node0.send_signal(signal.SIGINT)
        _, err0 = node0.communicate(timeout=60)
        _, err1 = node1.communicate(timeout=60)
        self.assertEqual(node0.returncode, 130, err0)
        self.assertIn(f"job {job} was stopped: interrupted by SIGINT", err1)
        self.assertNotIn("failed", err1)

    def test_manual_mode_nodes_keep_a_record_each_in_shared_and_own_state_dirs(self):
        # Nodes 0 and 1 share a state dir (a home on NFS), node 2 has its
        # own: each node's record is reachable where it runs, none takes
        # another's name, and `stop` of a node's record stops that node.
        rdzv = free_port()
        secret = self.write("secret", "s3cr3t-shared\n", 0o600)
        job = self.job_name("node-records")
        own_state = os.path.join(self.tmp, "node2-state")
        line = ["--nnodes", "3", "--master-addr", "127.0.0.1", "--rdzv-port", str(rdzv),
                "--name", job, "--secret-file", secret, "--", "sh", "-c",
                'echo "up $RANK"; exec sleep 300']
        node0 = self.start_dlaunch(["--node-rank", "0"] + line)
        node1 = self.run_dlaunch(["-d", "--node-rank", "1"] + line)
        self.assertEqual(node1.returncode, 0, node1.stderr)
        self.assertEqual(node1.stdout.strip(), f"{job}.node1")
        node2 = self.start_dlaunch(["--node-rank", "2"] + line,
                                   env=self.env(DLAUNCH_STATE_DIR=own_state))
        self.assertTrue(harness.wait_for(lambda: len(harness.processes_with_marker(job)) >= 3, 60))

        def listed(state):
            r = self.run_dlaunch(["list", "--json"], env=self.env(DLAUNCH_STATE_DIR=state))
            self.assertEqual(r.returncode, 0, r.stderr)
            return {j["name"]: j for j in json.loads(r.stdout)}

        shared = listed(self.state)
        self.assertEqual(shared[job]["status"], "RUNNING")
        self.assertIsNone(shared[job]["node_of_job"])
        self.assertEqual(shared[f"{job}.node1"]["status"], "RUNNING")
        self.assertEqual(shared[f"{job}.node1"]["node_of_job"], job)
        self.assertEqual(shared[f"{job}.node1"]["node0"], f"127.0.0.1:{rdzv}")
        self.assertNotIn(f"{job}.node2", shared)
        self.assertEqual(set(listed(own_state)), {f"{job}.node2"})
        # On node 2's machine the job's name leads to the node's record.
        r = self.run_dlaunch(["stop", job], env=self.env(DLAUNCH_STATE_DIR=own_state))
        self.assertEqual(r.returncode, 1)
        self.assertIn(f"this machine has its manual-mode node {job}.node2", r.stderr)

        r = self.run_dlaunch(["stop", f"{job}.node1"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(f"job {job}.node1 stopped", r.stdout)
        _, err0 = node0.communicate(timeout=60)
        self.assertNotEqual(node0.returncode, 0, err0)
        node2.communicate(timeout=60)
        self.assertEqual(listed(self.state)[f"{job}.node1"]["status"], "STOPPED")
        self.assertNotIn(listed(own_state)[f"{job}.node2"]["status"],
                         ("PENDING", "RUNNING", "RESTARTING", "LOST"))
        self.assertNothingLeft(job)

    def test_a_stopped_rank_is_continued_and_ends_on_sigterm_not_after_the_grace(self):
        # A rank frozen with SIGSTOP (Ctrl-Z, a debugger let go) holds a
        # SIGTERM pending; without a SIGCONT it would only be killed once
        # --grace has passed, and its TERM handler (a checkpoint's save)
        # would never run.
        job = self.job_name("sigstop")
        p = self.start_dlaunch(["-n", "2", "--name", job, "--grace", "300", "--", "sh", "-c",
                                'trap "echo term-handled-$RANK; exit 7" TERM; echo "up $RANK"; '
                                'while :; do sleep 0.2; done'])
        self.assertTrue(harness.wait_for(lambda: len(self.shells(job)) == 2, 60))
        frozen = self.shells(job)[0]
        os.kill(frozen, signal.SIGSTOP)
        self.assertTrue(harness.wait_for(lambda: process_state(frozen) == "T", 10))
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=120)
        self.assertEqual(p.returncode, 130, err)
        self.assertEqual(sorted(l.split("] ", 1)[1] for l in out.splitlines() if "term-" in l),
                         ["term-handled-0", "term-handled-1"], out + err)
        self.assertNothingLeft(job)

    def shells(self, job):
        """The job's rank shells: each leads its rank's process group (their
        `sleep` children are in it too)."""
        leaders = []
        for pid in harness.processes_with_marker(job):
            try:
                if os.getpgid(pid) == pid:
                    leaders.append(pid)
            except OSError:
                pass
        return sorted(leaders)

    def test_manual_mode_min_max_takes_a_late_node_as_a_spare(self):
        # torchrun's way: the same --nnodes 2:3 on each node. Node 0 starts
        # with the two that joined by --join-timeout; node 2 comes later and
        # waits as a spare; when node 1's dlaunch is killed, node 2 takes
        # node rank 1 in the next round.
        rdzv = free_port()
        secret = self.write("secret", "s3cr3t-shared\n", 0o600)
        script = ('echo "round=$TORCHELASTIC_RESTART_COUNT rank=$RANK world=$WORLD_SIZE"; '
                  '[ "$TORCHELASTIC_RESTART_COUNT" != 0 ] || exec sleep 120')

        def node(rank, *extra, **kwargs):
            return self.start_dlaunch(["--nnodes", "2:3", "--node-rank", str(rank), "--master-addr",
                                       "127.0.0.1", "--rdzv-port", str(rdzv), "--secret-file",
                                       secret, *extra, "--", "sh", "-c", script], **kwargs)

        self.elastic_job = self.job_name("manual-elastic")
        # Node 0's output in files, read while it runs: it says when node 2 joined.
        err0_path = os.path.join(self.tmp, "node0.err")
        node0 = node(0, "--join-timeout", "2", "--max-restarts", "2", "--name", self.elastic_job,
                     stdout=harness.open_output(self, "node0.out"),
                     stderr=harness.open_output(self, "node0.err"))
        node1 = node(1)
        try:
            self.assertTrue(harness.wait_for(lambda: len(self.sleeping()) == 2, 60),
                            "round 0 never ran on 2 nodes")
            node2 = node(2)
            # Joined, and given nothing: round 0 goes on on two nodes.
            joined = harness.wait_for_text(
                err0_path, "joined after the start: a spare for the next round", 60)
            self.assertIsNotNone(joined, "node 2 never joined as a spare")
            self.assertEqual(len(self.sleeping()), 2)
            node1.kill()
            node0.wait(timeout=60)
            out2, _ = node2.communicate(timeout=60)
        finally:
            for p in (node0, node1):
                if p.poll() is None:
                    p.kill()
                p.communicate()
        with open(os.path.join(self.tmp, "node0.out")) as f:
            out0 = f.read()
        with open(err0_path) as f:
            err0 = f.read()
        self.assertEqual(node0.returncode, 0, err0)
        self.assertIn("starting on 2 nodes (2 to 3); not joined: node2", err0)
        self.assertIn("joined after the start: a spare for the next round", err0)
        self.assertRegex(err0, r"takes node 1 of ")
        self.assertIn("round=1 rank=1 world=2", out0)
        self.assertIn("[1] round=1 rank=1 world=2", out2)  # on node 2's own terminal
        self.assertNotIn("round=0", out2)

    def sleeping(self):
        """The job's round-0 ranks (sleep), by their marker."""
        return [p for p in harness.processes_with_marker(self.elastic_job)
                if harness.exe_name(p) == "sleep"]

    def test_a_py_program_and_a_module_run_with_python_as_torchrun_runs_them(self):
        # An ordinary script, not executable: `torchrun train.py` runs it.
        script = self.write("train.py", "import os, sys\n"
                            "print('rank', os.environ['RANK'], 'args', sys.argv[1:], "
                            "'unbuffered', sys.stdout.write_through)\n")
        env = self.env()
        env.pop("PYTHONUNBUFFERED", None)  # so that only -u makes it so
        r = self.run_dlaunch(["--nproc-per-node", "2", "train.py", "--lr", "3e-4"],
                             cwd=os.path.dirname(script), env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        for rank in (0, 1):
            self.assertIn(f"rank {rank} args ['--lr', '3e-4'] unbuffered True", r.stdout)
        data = self.write("in.json", '{"b": 1}')
        r = self.run_dlaunch(["-n", "1", "-m", "json.tool", data])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn('"b": 1', r.stdout)
        r = self.run_dlaunch(["-n", "1", "--no-python", "--", script])
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("Permission denied", r.stderr)  # as it is: a file that cannot run

    def test_manual_mode_wrong_secret_is_refused(self):
        rdzv = free_port()
        good = self.write("good", "one\n", 0o600)
        bad = self.write("bad", "two\n", 0o600)
        node0 = self.start_dlaunch(["--nnodes", "2", "--node-rank", "0", "--master-addr",
                                    "127.0.0.1", "--rdzv-port", str(rdzv), "--rdzv-timeout", "5",
                                    "--secret-file", good, "--", "true"])
        r = self.run_dlaunch(["--nnodes", "2", "--node-rank", "1", "--master-addr", "127.0.0.1",
                              "--rdzv-port", str(rdzv), "--secret-file", bad, "--", "true"])
        # A configuration error, as every other refusal: 2, not 1.
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("the coordinator refused this agent: wrong job secret", r.stderr)
        _, err0 = node0.communicate(timeout=60)
        self.assertEqual(node0.returncode, 1)
        self.assertIn("timed out", err0)
        # Node 0 names the address it refused.
        self.assertRegex(err0, r"rendezvous: 127\.0\.0\.1:\d+ failed to prove the job's secret")

    def env_without_secret(self):
        env = self.env()
        for name in ("DLAUNCH_SECRET", "DLAUNCH_SECRET_FILE"):
            env.pop(name, None)
        return env

    def test_manual_mode_node_0_makes_the_secret_and_prints_the_line_for_the_others(self):
        # As `kubeadm join --token`: node 1 runs the line node 0 printed. The
        # secret is in no process's argv and in no rank's environment.
        rdzv = free_port()
        rank = ("import os\n"
                "secret = os.environ.get('DLAUNCH_SECRET_SEEN', '')\n"
                "print('rank', os.environ['RANK'], 'env has secret:', 'DLAUNCH_SECRET' in os.environ)\n"
                "pid = os.getpid()\n"
                "while pid > 1:\n"
                "    with open(f'/proc/{pid}/cmdline', 'rb') as f:\n"
                "        if secret and secret.encode() in f.read(): print('secret in argv of', pid)\n"
                "    with open(f'/proc/{pid}/stat') as f:\n"
                "        pid = int(f.read().rsplit(')', 1)[1].split()[1])\n")
        script = self.write("rank.py", rank)
        node0 = self.start_dlaunch(["--nnodes", "2", "--node-rank", "0", "--master-addr",
                                    "127.0.0.1", "--rdzv-port", str(rdzv), "--", sys.executable,
                                    script], env=self.env_without_secret())
        line = ""
        while "DLAUNCH_SECRET=" not in line:
            line = node0.stderr.readline()
            self.assertTrue(line, "node 0 printed no line for the other nodes")
        self.assertTrue(line.startswith("  DLAUNCH_SECRET="), line)
        secret = line.split()[0].split("=", 1)[1]
        self.assertEqual(len(secret), 64)
        self.assertIn("--node-rank <N>", line)
        env = self.env_without_secret()
        env["DLAUNCH_SECRET_SEEN"] = secret  # for the rank's argv check only
        # The line says `dlaunch`: the one under test, not one installed earlier.
        env["PATH"] = f"{harness.BIN_DIR}:{env.get('PATH', '/usr/bin:/bin')}"
        # Typed into a shell, as a user pastes it (not `sh -c LINE`, whose argv
        # would hold it).
        node1 = subprocess.run(["sh"], input=line.strip().replace("<N>", "1") + "\n",
                               capture_output=True, text=True, timeout=120, env=env)
        self.assertEqual(node1.returncode, 0, node1.stderr)
        out0, err0 = node0.communicate(timeout=60)
        self.assertEqual(node0.returncode, 0, err0)
        self.assertIn("rank 1 env has secret: False", node1.stdout)
        self.assertIn("rank 0 env has secret: False", out0)
        self.assertNotIn("secret in argv", node1.stdout)

    def test_manual_mode_another_node_without_a_secret_is_told_where_it_comes_from(self):
        r = self.run_dlaunch(["--nnodes", "2", "--node-rank", "1", "--master-addr", "127.0.0.1",
                              "--rdzv-port", str(free_port()), "--", "true"],
                             env=self.env_without_secret())
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("node 1 needs the job's secret: start it with the DLAUNCH_SECRET=... line "
                      "that node 0 printed", r.stderr)

    def test_manual_mode_runs_open_only_with_insecure_no_secret(self):
        rdzv = free_port()
        args = ["--nnodes", "2", "--master-addr", "127.0.0.1", "--rdzv-port", str(rdzv),
                "--insecure-no-secret", "--", "true"]
        node0 = self.start_dlaunch(["--node-rank", "0"] + args, env=self.env_without_secret())
        node1 = self.run_dlaunch(["--node-rank", "1"] + args, env=self.env_without_secret())
        self.assertEqual(node1.returncode, 0, node1.stderr)
        _, err0 = node0.communicate(timeout=60)
        self.assertEqual(node0.returncode, 0, err0)
        self.assertIn("--insecure-no-secret: any host that reaches rendezvous port", err0)
        self.assertNotIn("DLAUNCH_SECRET=", err0)
        r = self.run_dlaunch(["--insecure-no-secret", "--", "true"])
        self.assertEqual(r.returncode, 2)
        self.assertIn("--insecure-no-secret is for manual mode", r.stderr)

    def test_the_same_torchrun_line_twice_on_one_machine_makes_two_nodes(self):
        # Both processes took themselves for node 0: the second could not
        # claim the job's name in the shared state dir (or listen) and exited.
        secret = self.write("secret", "shared\n", 0o600)
        port = free_port()
        line = ["--nnodes", "2", "--nproc-per-node", "1", "--rdzv-backend", "c10d",
                "--rdzv-endpoint", f"127.0.0.1:{port}", "--rdzv-id", self.job_name("twice"),
                "--secret-file", secret, "--", "sh", "-c", 'echo "rank $RANK of $WORLD_SIZE"']
        first = self.start_dlaunch(line)
        harness.wait_for(lambda: connectable(port), timeout=20)
        second = self.run_dlaunch(line)
        self.assertEqual(second.returncode, 0, second.stderr)
        self.assertIn(f"port {port} is taken on this machine: node 0 runs here already",
                      second.stderr)
        out, err = first.communicate(timeout=60)
        self.assertEqual(first.returncode, 0, err)
        self.assertEqual(sorted(l.split("] ", 1)[1] for l in out.splitlines() if "rank " in l),
                         ["rank 0 of 2", "rank 1 of 2"])

    def test_an_agent_that_meets_another_service_on_the_rendezvous_port_keeps_trying(self):
        # Something else answers on node 0's port for a while (node 0 not up
        # yet): node 1 says so and retries until node 0 is there.
        secret = self.write("secret", "shared\n", 0o600)
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        rdzv = listener.getsockname()[1]
        common = ["--nnodes", "2", "--master-addr", "127.0.0.1", "--rdzv-port", str(rdzv),
                  "--rdzv-timeout", "60", "--secret-file", secret, "--", "true"]
        node1 = self.start_dlaunch(["--node-rank", "1"] + common)
        answered = 0
        listener.settimeout(10)
        try:
            while answered < 3:  # three tries of node 1 met it
                conn, _ = listener.accept()
                with conn:
                    conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
                answered += 1
        finally:
            listener.close()
        self.assertIsNone(node1.poll(), "node 1 gave up on meeting another service")
        node0 = self.run_dlaunch(["--node-rank", "0"] + common)
        self.assertEqual(node0.returncode, 0, node0.stderr)
        _, err1 = node1.communicate(timeout=60)
        self.assertEqual(node1.returncode, 0, err1)

    def test_hosts_file_with_two_local_hosts(self):
        hosts = self.write("hosts.toml", """
[[host]]
name = "alpha"
address = "127.0.0.1"
slots = 2
[[host]]
name = "beta"
address = "localhost"
slots = 1
env = { EXTRA = "from-hosts-file" }
""")
        out = os.path.join(self.tmp, "h")
        r = self.run_dlaunch(["--hosts", hosts, "--"] + self.dump_cmd(out)
                             + [] , env=self.env())
        self.assertEqual(r.returncode, 0, r.stderr)
        envs = self.read_envs(out)
        self.assertEqual(sorted(envs), [0, 1, 2])
        self.assertEqual([envs[r]["DLAUNCH_HOST"] for r in range(3)], ["alpha", "alpha", "beta"])
        self.assertEqual([envs[r]["GROUP_RANK"] for r in range(3)], ["0", "0", "1"])
        self.assertIn("[alpha:0] rank 0 ok", r.stdout)
        self.assertIn("[beta:2] rank 2 ok", r.stdout)

    def test_failing_rank_decides_exit_code_and_nothing_is_left(self):
        job = self.job_name("fail")
        # The other ranks would sleep for an hour: they end only when the
        # failure stops them, by SIGTERM (which each says it got). Rank 2
        # fails once they are ready for it (each left a file).
        ready = os.path.join(self.tmp, "ready")
        os.makedirs(ready)
        script = ("import os, signal, sys, time\n"
                  "rank = os.environ['RANK']\n"
                  "def stopped(*_):\n"
                  "    print('rank', rank, 'stopped by SIGTERM', flush=True)\n"
                  "    os._exit(143)\n"
                  "signal.signal(signal.SIGTERM, stopped)\n"
                  "if rank == '2':\n"
                  "    while len(os.listdir(sys.argv[1])) < 3:\n"
                  "        time.sleep(0.05)\n"
                  "    print('about to fail'); sys.stdout.flush(); sys.exit(3)\n"
                  "open(os.path.join(sys.argv[1], rank), 'w').close()\n"
                  "time.sleep(3600)\n")
        r = self.run_dlaunch(["--nproc-per-node", "4", "--name", job, "--grace", "3", "--",
                              sys.executable, "-c", script, ready])
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("rank 2 on localhost exited with code 3", r.stderr)
        self.assertIn("| about to fail", r.stderr)
        # Stopped by the failure, within the grace: SIGTERM, not the SIGKILL after it.
        for rank in (0, 1, 3):
            self.assertIn(f"[{rank}] rank {rank} stopped by SIGTERM\n", r.stdout, r.stderr)
        self.assertNothingLeft(job)
        # the root cause is stored with the job and shown by `dlaunch get`
        r = self.run_dlaunch(["get", job])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("FAILED (exit code 3)", r.stdout)
        self.assertIn("rank 2 on localhost exited with code 3", r.stdout)
        self.assertIn("about to fail", r.stdout)

    def test_rank_killed_by_signal_gives_128_plus_n(self):
        r = self.run_dlaunch(["-n", "2", "--", "sh", "-c",
                              'if [ "$RANK" = 1 ]; then kill -9 $$; fi; sleep 60'])
        self.assertEqual(r.returncode, 137, r.stderr)
        self.assertIn("SIGKILL", r.stderr)

    def test_missing_program_is_reported(self):
        r = self.run_dlaunch(["-n", "1", "--", "/nonexistent/prog"])
        self.assertEqual(r.returncode, 127)
        self.assertIn("cannot run /nonexistent/prog", r.stderr)

    def test_every_rank_that_cannot_run_says_so_whole_in_its_log(self):
        # Both ranks fail at exec at once; the first failure stops the job, and
        # that must not cut or lose the other rank's message. A race, so a few runs.
        script = self.write("noexec.sh", "#!/bin/sh\necho never\n", 0o644)
        want = f"dlaunch: cannot run {script}: Permission denied"
        for attempt in range(6):
            job = self.job_name("noexec")
            r = self.run_dlaunch(["--nproc-per-node", "2", "--name", job, "--", script])
            self.assertEqual(r.returncode, 126, r.stderr)
            for rank in (0, 1):
                with open(os.path.join(self.state, job, f"rank-{rank}.log")) as f:
                    self.assertEqual(f.read(), want + "\n", f"run {attempt}, rank {rank}")
                self.assertIn(f"{rank}] {want}\n", r.stdout + r.stderr, f"run {attempt}")

    def test_ctrl_c_stops_everything_and_exits_130(self):
        job = self.job_name("int")
        p = self.start_dlaunch(["-n", "3", "--name", job, "--", "sh", "-c",
                                "echo started; sleep 100"])
        deadline = time.monotonic() + 30
        while len(harness.processes_with_marker(job)) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 130, err)
        self.assertNothingLeft(job)

    def test_ctrl_z_says_it_cannot_pause_the_job_and_the_job_goes_on(self):
        # Ctrl-Z reaches the terminal's foreground group: dlaunch and its local
        # agents (the ranks have groups of their own). Stopped, they would miss
        # heartbeats and the job would die.
        job = self.job_name("tstp")
        p = self.start_dlaunch(["-n", "1", "--name", job, "--heartbeat-timeout", "2", "--", "sh",
                                "-c", "sleep 5; echo survived"], process_group=0)
        self.assertTrue(harness.wait_for(lambda: harness.processes_with_marker(job), 30))
        os.killpg(p.pid, signal.SIGTSTP)
        out, err = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 0, err)
        self.assertIn("survived", out)
        self.assertIn("Ctrl-Z does not pause a job", err)

    def test_sighup_does_not_kill_the_job(self):
        job = self.job_name("hup")
        p = self.start_dlaunch(["-n", "1", "--name", job, "--", "sh", "-c",
                                "sleep 2; echo survived"])
        # The terminal closes while the job runs: wait for its rank, not for a
        # fixed time (on a loaded machine dlaunch may not have started yet).
        deadline = time.monotonic() + 30
        while not harness.processes_with_marker(job) and time.monotonic() < deadline:
            time.sleep(0.05)
        p.send_signal(signal.SIGHUP)
        out, err = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 0, err)
        self.assertIn("survived", out)

    def test_long_and_partial_lines_are_kept_whole(self):
        job = self.job_name("lines")
        script = "import sys; sys.stdout.write('x' * 150000 + '\\nlast-no-newline')"
        r = self.run_dlaunch(["-n", "1", "--name", job, "--", sys.executable, "-c", script])
        self.assertEqual(r.returncode, 0, r.stderr)
        # The log keeps the bytes as the rank wrote them: no newline inside the
        # long line, none added after the last one.
        with open(os.path.join(self.state, job, "rank-0.log")) as f:
            self.assertEqual(f.read(), "x" * 150000 + "\nlast-no-newline")
        # The terminal shows the long line in pieces of at most 64 KiB.
        shown = [l[len("[0] "):] for l in r.stdout.split("\n") if l.startswith("[0] x")]
        self.assertEqual("".join(shown), "x" * 150000)
        self.assertTrue(all(len(l) <= 65536 for l in shown))
        self.assertIn("[0] last-no-newline", r.stdout)

    def test_long_lines_are_not_torn_by_the_other_stream(self):
        # 100 KB lines on stdout while a thread writes short lines to stderr:
        # every long line reaches the rank log whole, the short ones beside it.
        job = self.job_name("torn")
        script = self.write("both.py", (
            "import sys, threading, time\n"
            "def chatter():\n"
            "    for i in range(2000):\n"
            "        sys.stderr.write(f'E{i}\\n'); sys.stderr.flush(); time.sleep(0.0005)\n"
            "t = threading.Thread(target=chatter); t.start()\n"
            "for i in range(150):\n"
            "    sys.stdout.write(f'L{i}:' + 'x' * 100000 + '\\n'); sys.stdout.flush()\n"
            "t.join()\n"))
        r = self.run_dlaunch(["-n", "1", "--name", job, "--", "/usr/bin/python3", script])
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(os.path.join(self.state, job, "rank-0.log")) as f:
            lines = f.read().split("\n")
        self.assertEqual(lines.pop(), "")
        long_lines = [l for l in lines if l.startswith("L")]
        torn = [l[:20] for l in lines if not (l.startswith("E") and l[1:].isdigit())
                and not (l.startswith("L") and l.endswith(":" + "x" * 100000))]
        self.assertEqual(torn, [], "lines torn apart in the rank log")
        self.assertEqual(len(long_lines), 150)
        self.assertEqual(len(lines), 2150)

    def test_ranks_filter_limits_terminal_not_files(self):
        job = self.job_name("filter")
        r = self.run_dlaunch(["-n", "3", "--ranks-filter", "1", "--name", job, "--", "sh", "-c",
                              'echo "hi from $RANK"'])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.strip(), "[1] hi from 1")
        for rank in range(3):
            with open(os.path.join(self.state, job, f"rank-{rank}.log")) as f:
                self.assertEqual(f.read(), f"hi from {rank}\n")

    def test_dry_run_prints_plan_and_starts_nothing(self):
        marker = os.path.join(self.tmp, "ran")
        r = self.run_dlaunch(["--dry-run", "-n", "2", "--", "touch", marker])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("local rank 1:", r.stdout)
        self.assertIn("WORLD_SIZE=2", r.stdout)
        self.assertFalse(os.path.exists(marker))
        self.assertFalse(os.path.exists(self.state))


if __name__ == "__main__":
    harness.require_binaries()
    harness.main(verbosity=2)
