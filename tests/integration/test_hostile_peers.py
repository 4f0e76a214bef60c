"""A running job's rendezvous port under attack: garbage, oversized frames, slow
and idle connections, wrong versions and wrong secrets, and forged log lines
after a failed proof. The job's result and logs must come out exactly as if
nobody had knocked, and nothing forged may ever be printed.

Then strangers who hold connections open (heartbeats before any proof, the
probe port), a handshake cut on its way, and an agent that knows the secret
but misbehaves (counts that overflow, ranks not its own, a host name with
escape sequences, a restart it never finishes): node 0 must bound what each
costs it and keep the job's fate its own."""

import glob
import os
import random
import resource
import select
import socket
import struct
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
import rdzv_wire as wire  # noqa: E402
from harness import DlaunchTestCase, connectable, free_port  # noqa: E402

LINES = 60
# Two ranks print numbered lines while the attack runs, then wait until the
# test says the attack is over (the file named in $ATTACK_DONE exists).
RANK_SCRIPT = ("import os, time\n"
               f"for i in range({LINES}):\n"
               "    print('line', os.environ['RANK'], i, flush=True); time.sleep(0.05)\n"
               "deadline = time.time() + 100\n"
               "while not os.path.exists(os.environ['ATTACK_DONE']) and time.time() < deadline:\n"
               "    time.sleep(0.05)\n")


def attack(port, kind, held, connected):
    try:
        s = wire.connect(port)
    except OSError:
        return
    connected.append(kind)
    try:
        if kind == "garbage":
            s.sendall(os.urandom(random.randint(1, 4096)))
        elif kind == "oversized":
            s.sendall(wire.frame(wire.HELLO, b"x" * 100_000))
        elif kind == "huge_header":
            s.sendall(b"\xff\xff\xff\xff\x01")
        elif kind == "wrong_version":
            s.sendall(wire.hello(version=99))
        elif kind == "wrong_magic":
            s.sendall(wire.hello(magic=0x12345678))
        elif kind == "slow":
            s.sendall(b"\x00\x00")  # half a header, then silence
            held.append(s)
            return
        elif kind == "wrong_secret":
            s.sendall(wire.hello())
            wire.read_frame(s)  # challenge
            s.sendall(wire.join(os.urandom(32)))
            # forged traffic after the failed proof must never be printed
            for i in range(5):
                s.sendall(wire.log_line(0, b"FORGED-LINE"))
                s.sendall(wire.rank_exit(0, 99))
        try:
            s.recv(1024)
        except OSError:
            pass
    except OSError:
        pass
    finally:
        if kind != "slow":
            s.close()


class HostilePeersTest(DlaunchTestCase):
    def run_job(self, job, port, during=None):
        done = os.path.join(self.tmp, "attack-done")
        p = self.start_dlaunch(["--nnodes", "1", "--node-rank", "0", "--master-addr", "127.0.0.1",
                                "--rdzv-port", str(port), "-n", "2", "--name", job,
                                "--secret-file", self.secret, "--", sys.executable, "-c",
                                RANK_SCRIPT], env=self.env(ATTACK_DONE=done))
        if during:
            during()
        open(done, "w").close()
        out, err = p.communicate(timeout=120)
        return p.returncode, out, err

    def setUp(self):
        super().setUp()
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 8192), hard))
        self.secret = self.write("secret", "the-real-secret\n", 0o600)

    def test_flood_leaves_result_and_logs_unchanged(self):
        port = free_port()
        held = []
        connected = []
        kinds = ["garbage", "oversized", "huge_header", "wrong_version", "wrong_magic", "slow",
                 "wrong_secret"]
        count = {"n": 0}

        def flood():
            harness.wait_for(lambda: connectable(port), timeout=10)
            threads = []
            for i in range(1000):
                kind = kinds[i % len(kinds)]
                t = threading.Thread(target=attack, args=(port, kind, held, connected))
                t.start()
                threads.append(t)
                if len(threads) >= 100:
                    for t in threads:
                        t.join()
                    threads = []
                count["n"] += 1
            for t in threads:
                t.join()

        job = self.job_name("hostile")
        code, out, err = self.run_job(job, port, flood)
        for s in held:
            s.close()
        self.assertEqual(count["n"], 1000)
        self.assertGreaterEqual(len(connected), 990, "the attack did not reach the job")
        self.assertEqual(code, 0, err)
        self.assertNotIn("FORGED", out + err)
        expected = {f"[{r}] line {r} {i}" for r in range(2) for i in range(LINES)}
        got = [l for l in out.splitlines() if l]
        self.assertEqual(len(got), 2 * LINES, out[-2000:])
        self.assertEqual(set(got), expected)
        for r in range(2):
            with open(os.path.join(self.state, job, f"rank-{r}.log")) as f:
                self.assertEqual(f.read(), "".join(f"line {r} {i}\n" for i in range(LINES)))
        self.assertIn("failed to prove the job's secret", err)

    def test_a_node_of_another_release_is_named_once_on_node_0(self):
        # Node 0 used to wait in silence for a node whose agent it refused.
        port = free_port()
        replies = []

        def old_release():
            harness.wait_for(lambda: connectable(port), timeout=10)
            for _ in range(3):
                s = wire.connect(port)
                s.sendall(wire.hello(version=wire.VERSION - 2))
                replies.append(wire.read_frame(s))
                s.close()

        code, _, err = self.run_job(self.job_name("release"), port, old_release)
        self.assertEqual(code, 0, err)
        self.assertEqual([r[0] for r in replies], [wire.REJECT] * 3)
        self.assertIn(f"protocol version {wire.VERSION - 2} is not supported",
                      wire.parse_reject(replies[0][1]))
        said = (f"rendezvous: 127.0.0.1 runs dlaunch protocol {wire.VERSION - 2}, this dlaunch "
                f"speaks {wire.VERSION}: install the same dlaunch release on every node")
        self.assertEqual(err.count(said), 1, err)

    def test_wrong_secret_gets_a_reject_and_a_closed_connection(self):
        port = free_port()
        result = {}

        def probe():
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                try:
                    s = wire.connect(port)
                    break
                except OSError:
                    time.sleep(0.05)
            s.sendall(wire.hello())
            challenge = wire.read_frame(s)
            result["challenge"] = challenge[0] if challenge else None
            s.sendall(wire.join(os.urandom(32)))
            reply = wire.read_frame(s)
            result["reply"] = reply
            result["closed"] = wire.read_frame(s) is None
            s.close()

        code, out, err = self.run_job(self.job_name("probe"), port, probe)
        self.assertEqual(code, 0, err)
        self.assertEqual(result["challenge"], wire.CHALLENGE)
        self.assertEqual(result["reply"][0], 11)  # reject
        self.assertIn(b"wrong job secret", result["reply"][1])
        self.assertTrue(result["closed"])


def limit_open_files(n):
    """preexec_fn: the child may open at most `n` files (soft and hard)."""
    def apply():
        resource.setrlimit(resource.RLIMIT_NOFILE, (n, n))
    return apply


def wait_connectable(port, timeout=20):
    harness.wait_for(lambda: connectable(port), timeout=timeout)


class HostileAgent:
    """An agent that knows the job's secret and speaks the protocol by hand."""

    def __init__(self, port, secret, node_rank=1, nproc=1, host=b"hostile"):
        self.sock = wire.connect(port)
        agent_nonce = os.urandom(32)
        self.sock.sendall(wire.hello(agent_nonce))
        msg_type, payload = wire.read_frame(self.sock)
        assert msg_type == wire.CHALLENGE, msg_type
        _, _, server_nonce = wire.parse_challenge(payload)
        proof = wire.join_proof(secret, server_nonce, agent_nonce)
        self.sock.sendall(wire.join_full(proof, node_rank, nproc, host=host, nnodes=2))
        self.reply = wire.read_frame(self.sock)

    def welcomed(self):
        return self.reply is not None and self.reply[0] == wire.WELCOME

    def reject_reason(self):
        """What node 0 refused this agent for: the Reject after its Welcome
        (the proof was right; the Join was not)."""
        reply = self.reply
        if reply is not None and reply[0] == wire.WELCOME:
            reply = wire.read_frame(self.sock)
        assert reply is not None and reply[0] == wire.REJECT, reply
        return wire.parse_reject(reply[1])

    def until(self, wanted, timeout=30):
        """Reads (answering probes and sending heartbeats) until a frame of
        type `wanted` arrives; its payload, or None when the connection closed."""
        deadline = time.monotonic() + timeout
        try:
            while time.monotonic() < deadline:
                ready, _, _ = select.select([self.sock], [], [], 1.0)
                if not ready:
                    self.sock.sendall(wire.heartbeat())
                    continue
                frame = wire.read_frame(self.sock)
                if frame is None:
                    return None
                msg_type, payload = frame
                if msg_type == wanted:
                    return payload
                if msg_type == wire.PROBE:
                    probe = wire.parse_probe(payload)
                    self.sock.sendall(wire.probe_report(
                        [(True, 100, b"lo", b"") for _ in probe["addresses"]]))
        except (BrokenPipeError, ConnectionResetError):
            return None  # closed by node 0
        raise AssertionError(f"no frame of type {wanted} in {timeout} s")

    def closed_within(self, timeout):
        return self.until(-1, timeout) is None

    def close(self):
        self.sock.close()


class HostilePeersWithTheSecretTest(DlaunchTestCase):
    """A buggy or compromised agent of the job: it knows the secret."""

    def setUp(self):
        super().setUp()
        self.secret_file = self.write("secret", "the-real-secret\n", 0o600)
        self.secret = wire.read_secret_file(self.secret_file)

    def node0(self, job, port, *extra, script="print('node 0 ran', flush=True)"):
        return self.start_dlaunch(["--nnodes", "2", "--node-rank", "0", "--master-addr",
                                   "127.0.0.1", "--rdzv-port", str(port), "--rdzv-timeout", "60",
                                   "--name", job, "--secret-file", self.secret_file, *extra, "--",
                                   sys.executable, "-c", script])

    def node1(self, port):
        return self.run_dlaunch(["--nnodes", "2", "--node-rank", "1", "--master-addr",
                                 "127.0.0.1", "--rdzv-port", str(port), "--rdzv-timeout", "60",
                                 "--secret-file", self.secret_file, "--", sys.executable, "-c",
                                 "print('node 1 ran', flush=True)"], timeout=90)

    def test_counts_that_would_overflow_are_refused_with_the_reason(self):
        # nproc 2^31-1 was welcomed, and the Assign carried a negative world size.
        port = free_port()
        p = self.node0(self.job_name("overflow"), port)
        wait_connectable(port)
        agent = HostileAgent(port, self.secret, nproc=2**31 - 1)
        self.assertEqual(agent.reject_reason(),
                         "hostile asked for 2147483647 ranks; a node runs at most 4096")
        agent.close()
        # The job goes on with a real node 1.
        r = self.node1(port)
        self.assertEqual(r.returncode, 0, r.stderr)
        out, err = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 0, err)
        self.assertIn("node 0 ran", out)

    def test_a_host_name_with_escape_sequences_is_refused_and_never_printed(self):
        port = free_port()
        job = self.job_name("escape")
        p = self.node0(job, port)
        wait_connectable(port)
        agent = HostileAgent(port, self.secret, host=b"evil\x1b]0;owned\x07\x1b[2J\xff")
        self.assertEqual(agent.reject_reason(),
                         'host name "evil\\x1b]0;owned\\x07\\x1b[2J\\xff" is not printable '
                         'UTF-8 text')
        agent.close()
        # The job's record stays readable meanwhile.
        listed = self.run_dlaunch(["list"])
        self.assertEqual(listed.returncode, 0, listed.stderr)
        self.assertIn(job, listed.stdout)
        r = self.node1(port)
        self.assertEqual(r.returncode, 0, r.stderr)
        out, err = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 0, err)
        self.assertNotIn("\x1b", out + err)

    def test_output_for_ranks_not_its_own_is_said_five_times_then_the_agent_is_closed(self):
        port = free_port()
        p = self.node0(self.job_name("foreign"), port)
        wait_connectable(port)
        agent = HostileAgent(port, self.secret)
        self.assertTrue(agent.welcomed(), agent.reply)
        flood = b"".join(wire.log_line(1000 + i % 5000, b"x" * 100) for i in range(3000))
        try:
            agent.sock.sendall(flood)
        except OSError:
            pass  # closed under the flood: what is asserted below
        try:
            self.assertTrue(agent.closed_within(30))
        finally:
            agent.close()
        _, err = p.communicate(timeout=60)
        self.assertNotEqual(p.returncode, 0)
        self.assertEqual(err.count("which is not one of its ranks"), 5, err[-3000:])
        self.assertIn("hostile sent 1000 messages for ranks that are not its own; its connection "
                      "is closed", err)
        self.assertLess(len(err), 20_000)

    def test_a_replayed_hello_and_join_fail_the_proof(self):
        # The coordinator's nonce is fresh per connection: a Join recorded on
        # one connection proves nothing on the next.
        port = free_port()
        p = self.node0(self.job_name("replay"), port)
        wait_connectable(port)
        agent_nonce = os.urandom(32)
        first = wire.connect(port)
        first.sendall(wire.hello(agent_nonce))
        _, _, server_nonce = wire.parse_challenge(wire.read_frame(first)[1])
        recorded = wire.join_full(wire.join_proof(self.secret, server_nonce, agent_nonce), 1, 1,
                                  host=b"recorded", nnodes=2)
        first.sendall(recorded)
        self.assertEqual(wire.read_frame(first)[0], wire.WELCOME)
        replay = wire.connect(port)
        replay.sendall(wire.hello(agent_nonce))
        _, _, second_nonce = wire.parse_challenge(wire.read_frame(replay)[1])
        self.assertNotEqual(second_nonce, server_nonce)
        replay.sendall(recorded)
        reply = wire.read_frame(replay)
        self.assertEqual(reply[0], wire.REJECT, reply)
        self.assertIn("wrong job secret", wire.parse_reject(reply[1]))
        replay.close()
        first.close()  # node 1 lost: the job ends
        _, err = p.communicate(timeout=60)
        self.assertIn("failed to prove the job's secret", err)

    def test_an_agent_refuses_a_coordinator_that_cannot_prove_the_secret(self):
        # A listener on node 0's port that knows the protocol but not the
        # secret: its Welcome's proof is wrong, and node 1 must not take its
        # orders.
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        node1 = self.start_dlaunch(["--nnodes", "2", "--node-rank", "1", "--master-addr",
                                    "127.0.0.1", "--rdzv-port", str(port), "--rdzv-timeout", "30",
                                    "--secret-file", self.secret_file, "--", "true"])
        listener.settimeout(30)
        conn, _ = listener.accept()
        with conn:
            self.assertEqual(wire.read_frame(conn)[0], wire.HELLO)
            conn.sendall(wire.frame(wire.CHALLENGE, struct.pack(">IH", wire.MAGIC, wire.VERSION)
                                    + wire.string(os.urandom(32))))
            self.assertEqual(wire.read_frame(conn)[0], wire.JOIN)
            conn.sendall(wire.frame(wire.WELCOME, wire.string(os.urandom(32))))
            _, err = node1.communicate(timeout=30)
        listener.close()
        self.assertNotEqual(node1.returncode, 0)
        self.assertIn("the rendezvous peer did not prove the job's secret", err)

    def test_a_restart_the_agent_never_finishes_ends_at_the_grace_period(self):
        port = free_port()
        job = self.job_name("no-done")
        p = self.node0(job, port, "--max-restarts", "1", "--grace", "1",
                       script="import time; time.sleep(60)")
        wait_connectable(port)
        agent = HostileAgent(port, self.secret)
        self.assertTrue(agent.welcomed(), agent.reply)
        assign = wire.parse_assign(agent.until(wire.ASSIGN))
        # Its rank fails, as a real one would; then it never says it stopped.
        agent.sock.sendall(wire.rank_exit(assign["rank_offset"], 1))
        stop = wire.parse_stop(agent.until(wire.STOP))
        self.assertTrue(stop["restart"], stop)
        self.assertTrue(agent.closed_within(40), "node 0 kept waiting for the restart")
        agent.close()
        _, err = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 1, err)
        self.assertIn("lost the agent of node 1 (hostile): its ranks did not stop within the "
                      "grace period (1 s) for the restart", err)
        self.assertNothingLeft(job)


class HostileStrangersHoldingConnectionsTest(DlaunchTestCase):
    """Strangers without the secret who hold connections open, and a handshake
    cut on its way: node 0 at a low open-file limit still gets its node 1."""

    def setUp(self):
        super().setUp()
        why = harness.open_files_reason(4096, "the strangers")
        if why:
            self.skipTest(why)
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        self.secret_file = self.write("secret", "the-real-secret\n", 0o600)
        self.held = []
        self.holding = threading.Event()

    def tearDown(self):
        self.holding.clear()
        for s in self.held:
            s.close()
        super().tearDown()

    def start_node0(self, job, port, nofile, *extra):
        return subprocess.Popen(
            [harness.DLAUNCH, "--nnodes", "2", "--node-rank", "0", "--master-addr", "127.0.0.1",
             "--rdzv-port", str(port), "--rdzv-timeout", "40", "--name", job, "--secret-file",
             self.secret_file, *extra, "--", sys.executable, "-c", "print('ran', flush=True)"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=self.env(),
            preexec_fn=limit_open_files(nofile))

    def node1(self, rdzv_port, *extra):
        return self.run_dlaunch(["--nnodes", "2", "--node-rank", "1", "--master-addr",
                                 "127.0.0.1", "--rdzv-port", str(rdzv_port), "--rdzv-timeout",
                                 "40", "--secret-file", self.secret_file, *extra, "--",
                                 sys.executable, "-c", "print('ran', flush=True)"], timeout=90)

    def hold(self, port, count, first=b""):
        """`count` connections to `port`, each sending `first` and then a
        Heartbeat a second from a thread, until the test ends."""
        for _ in range(count):
            try:
                s = socket.create_connection(("127.0.0.1", port), timeout=5)
            except OSError:
                break
            if first:
                s.sendall(first)
            self.held.append(s)
        self.holding.set()

        def beat():
            while self.holding.is_set():
                for s in list(self.held):
                    try:
                        s.send(wire.heartbeat(), socket.MSG_DONTWAIT)
                    except OSError:
                        pass
                time.sleep(1)
        threading.Thread(target=beat, daemon=True).start()

    def test_heartbeats_before_the_proof_do_not_hold_a_connection_past_the_handshake(self):
        # 1,015 connections kept alive by a heartbeat a second, against a node 0
        # that may open 1,024 files: node 1 could never join.
        port = free_port()
        job = self.job_name("held")
        p = self.start_node0(job, port, 1024)
        self.procs.append(p)
        wait_connectable(port)
        self.hold(port, 1015)
        r = self.node1(port)
        self.assertEqual(r.returncode, 0, r.stderr)
        out, err = p.communicate(timeout=90)
        self.assertEqual(p.returncode, 0, err)
        self.assertEqual(out.count("ran"), 2, out)
        self.assertTrue(os.path.exists(os.path.join(self.state, job, "rank-0.log")), err)
        self.assertNotIn("Too many open files", err)

    def test_strangers_on_the_probe_port_cannot_keep_node_1_from_reaching_node_0(self):
        # The probe port is the future MASTER_PORT: 1,530 held connections under
        # a limit of 1,536 made node 1's probe time out.
        port = free_port()
        master_port = free_port()
        job = self.job_name("probe")
        p = self.start_node0(job, port, 1536, "--master-port", str(master_port))
        self.procs.append(p)
        wait_connectable(master_port)
        self.hold(master_port, 1530)
        r = self.node1(port)
        self.assertEqual(r.returncode, 0, r.stderr)
        out, err = p.communicate(timeout=90)
        self.assertEqual(p.returncode, 0, err)
        self.assertEqual(out.count("ran"), 2, out)

    def test_an_agent_whose_handshake_is_cut_after_its_join_tries_again(self):
        # A flood of strangers evicts a greeted session: its agent used to give
        # up ("lost the coordinator") and node 0 waited out the timeout.
        port = free_port()
        job = self.job_name("cut")
        p = self.start_node0(job, port, 4096)
        self.procs.append(p)
        wait_connectable(port)
        proxy = CuttingProxy(port)
        try:
            r = self.node1(proxy.port)
        finally:
            proxy.close()
        self.assertEqual(proxy.cut, 1)
        self.assertEqual(r.returncode, 0, r.stderr)
        out, err = p.communicate(timeout=90)
        self.assertEqual(p.returncode, 0, err)
        self.assertEqual(out.count("ran"), 2, out)


class CuttingProxy:
    """Forwards connections to node 0's rendezvous port; the first one is cut
    when its agent sends Join (before node 0 sees it), as an eviction would."""

    def __init__(self, target):
        self.target = target
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen()
        self.port = self.listener.getsockname()[1]
        self.cut = 0
        self.closing = False
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while not self.closing:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self.serve, args=(client,), daemon=True).start()

    def serve(self, client):
        upstream = socket.create_connection(("127.0.0.1", self.target))
        cut_this = self.cut == 0
        pending = b""
        try:
            while True:
                ready, _, _ = select.select([client, upstream], [], [], 1.0)
                if self.closing:
                    return
                for s in ready:
                    data = s.recv(65536)
                    if not data:
                        return
                    if s is upstream:
                        client.sendall(data)
                        continue
                    if cut_this:
                        pending += data
                        # Frames: 4-byte length, 1-byte type; Join is type 3.
                        while len(pending) >= 5:
                            length, msg_type = struct.unpack(">IB", pending[:5])
                            if msg_type == wire.JOIN:
                                self.cut += 1
                                return
                            if len(pending) < 4 + length:
                                break
                            upstream.sendall(pending[:4 + length])
                            pending = pending[4 + length:]
                    else:
                        upstream.sendall(data)
        except OSError:
            return
        finally:
            client.close()
            upstream.close()

    def close(self):
        self.closing = True
        self.listener.close()


if __name__ == "__main__":
    harness.require_binaries()
    harness.main(verbosity=2)
