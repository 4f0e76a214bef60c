"""A running job's rendezvous port under attack: garbage, oversized frames, slow
and idle connections, wrong versions and wrong secrets, and forged log lines
after a failed proof. The job's result and logs must come out exactly as if
nobody had knocked, and nothing forged may ever be printed."""

import os
import random
import resource
import socket
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
import rdzv_wire as wire  # noqa: E402
from harness import DlaunchTestCase, free_port  # noqa: E402

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


def connectable(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


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


if __name__ == "__main__":
    harness.require_binaries()
    unittest.main(verbosity=2)
