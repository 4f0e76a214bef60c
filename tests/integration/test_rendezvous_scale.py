"""A manual-mode job of 2,000 nodes on one machine: node 0 is the real
dlaunch, the other 1,999 agents come from load processes that speak the real
protocol (rdzv_load.py). Everyone joins and gets contiguous ranks, and the
job's result comes out as a user would see it; a job that fails while every
agent's connection closes at once, as a real fleet's agents exit while node 0
is still writing Stop to them, ends with the failing rank's code and no crash."""

import json
import os
import resource
import signal
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
import rdzv_load  # noqa: E402
from harness import DlaunchTestCase, free_port  # noqa: E402

NODES = 2000
# Two cores run node 0 and the load: two load processes share them.
LOAD_PROCS = 2
# The job's --rdzv-timeout, the load's and (plus 30 s) the wait for node 0: a
# bound that only ends a hang, not a speed the test asks for. A job here
# joins and ends within about a second in the normal build, a few under the
# sanitizers; a loaded 2-core machine may take several times that, and must
# not fail for it: the results asserted are what joined and what each got.
TIMEOUT = 300


class RendezvousScaleTest(DlaunchTestCase):
    def setUp(self):
        super().setUp()
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft < hard:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        why = harness.open_files_reason(NODES + 256, f"{NODES} nodes")
        if why:
            self.skipTest(why)
        self.secret = self.write("secret", "scale-test-secret\n", 0o600)

    def run_job(self, job, preexec_fn=None, **load_options):
        port = free_port()
        p = self.start_dlaunch(["--nnodes", str(NODES), "--node-rank", "0",
                                "--master-addr", "127.0.0.1", "--rdzv-port", str(port),
                                "--secret-file", self.secret, "--nproc-per-node", "1",
                                "--name", job, "--log-dir", os.path.join(self.tmp, "logs"),
                                "--rdzv-timeout", str(TIMEOUT), "--", "true"],
                               preexec_fn=preexec_fn)
        load = rdzv_load.Load(port, self.secret, NODES, procs=LOAD_PROCS, timeout=TIMEOUT,
                              **load_options)
        self.procs.extend(load.start())
        try:
            out, err = p.communicate(timeout=TIMEOUT + 30)
        except Exception:
            p.kill()
            out, err = p.communicate()
            load.kill()
            self.fail(f"dlaunch did not exit; stderr:\n{err[-3000:]}")
        summary = load.wait(timeout=30)
        return p.returncode, out, err, summary

    def assertNoCrash(self, code, err):
        self.assertNotEqual(code, -signal.SIGABRT, f"dlaunch aborted:\n{err[-3000:]}")
        self.assertGreaterEqual(code, 0, f"dlaunch died of signal {-code}:\n{err[-3000:]}")
        for needle in ("double free", "AddressSanitizer", "terminate called", "corrupted"):
            self.assertNotIn(needle, err)

    def test_two_thousand_nodes_join_get_contiguous_ranks_and_finish(self):
        code, out, err, load = self.run_job(self.job_name("scale"))
        self.assertNoCrash(code, err)
        self.assertEqual(code, 0, f"stderr:\n{err[-3000:]}\nload: {load['errors']}")
        self.assertEqual(load["outcomes"], {"stopped": NODES - 1}, load["errors"])
        self.assertEqual(load["stop_codes"], {"0": NODES - 1})
        # Every load node got one rank, the one after node 0's, in node order.
        self.assertEqual(load["assigned"], [[n, n, 1, NODES, NODES] for n in range(1, NODES)])
        # The MASTER_ADDR probe went in rounds: 64 scouts tried each of node
        # 0's addresses, every other node only the one the scouts chose, so
        # node 0 was not sent one connection per node and address (node 0's
        # addresses here are this machine's, at least two, and tests running
        # beside this one may add some: the bound holds for any number).
        self.assertIn("MASTER_ADDR", err)
        probes = load["stats"].get("probe_connects", 0)
        self.assertGreaterEqual(probes, NODES - 1)
        self.assertLess(probes, 2 * (NODES - 1), load["stats"])

    def test_failed_job_while_every_connection_closes_during_stop(self):
        # The load process holding the failing node sends the failure once all
        # its agents have their assignment; every load process closes all of
        # its connections at its first Stop, while node 0 is still writing
        # Stop to the others. Before the send-path fix this aborted node 0
        # with a double free every time.
        failing = NODES // 2
        code, out, err, load = self.run_job(self.job_name("scale-fail"), fail_node=failing,
                                            fail_code=3, close_all_on_stop=True)
        self.assertNoCrash(code, err)
        self.assertEqual(code, 3, f"stderr:\n{err[-3000:]}\nload: {load['errors']}")
        self.assertIn(f"rank {failing}", err)
        self.assertIn("exited with code 3", err)
        self.assertEqual(load["agents"], NODES - 1)
        self.assertEqual(set(load["outcomes"]) - {"stopped", "closed_on_stop"}, set(),
                         load["errors"])
        self.assertEqual(len(load["assigned"]), NODES - 1)

    def test_more_nodes_than_node_0_may_open_files_run_through_relays(self):
        # Node 0 limited to 1,024 open files cannot hold 2,000 agents'
        # connections itself (as 20,000 agents under a hard limit of 20,000):
        # relay processes hold them, and the job runs as any other (without
        # them it was refused: "needs about 2,131 open files").
        code, out, err, load = self.run_job(self.job_name("scale-relayed"),
                                            preexec_fn=limit_files(1024))
        self.assertNoCrash(code, err)
        self.assertEqual(code, 0, f"stderr:\n{err[-3000:]}\nload: {load['errors']}")
        self.assertEqual(load["outcomes"], {"stopped": NODES - 1}, load["errors"])
        self.assertEqual(load["assigned"], [[n, n, 1, NODES, NODES] for n in range(1, NODES)])
        self.assertNoRelayLeft()

    def test_a_failure_under_relays_reaches_every_agent(self):
        # One agent's rank fails: node 0 names it and every other agent, held
        # by a relay, is sent Stop with the failing code.
        failing = NODES // 2
        code, out, err, load = self.run_job(self.job_name("scale-relayed-fail"), fail_node=failing,
                                            fail_code=3, preexec_fn=limit_files(1024))
        self.assertNoCrash(code, err)
        self.assertEqual(code, 3, f"stderr:\n{err[-3000:]}\nload: {load['errors']}")
        self.assertIn(f"rank {failing}", err)
        self.assertEqual(load["stop_codes"], {"3": NODES - 1}, load["errors"])
        self.assertNoRelayLeft()

    def test_a_job_beyond_the_descriptor_limit_is_refused_at_once(self):
        # What relays cannot hold still has to fit: 2,000 hosts over SSH need
        # one SSH session each in node 0, which may open 1,024 files. It says
        # so at once instead of starting what could never finish.
        hosts = self.write("hosts.toml", "".join(
            f'[[host]]\nname = "n{n}"\naddress = "198.18.{n // 250}.{n % 250 + 1}"\n'
            for n in range(NODES)))
        p = self.start_dlaunch(["--hosts", hosts, "--", "true"], preexec_fn=limit_files(1024))
        out, err = p.communicate(timeout=30)
        self.assertEqual(p.returncode, 1, err)
        self.assertIn("a job of 2,000 nodes needs about", err)
        self.assertIn("one SSH session per host", err)
        self.assertIn("but this process may open 1,024", err)

    def test_relayed_agents_end_when_the_coordinator_hangs(self):
        # Relays answer the agents' heartbeats themselves; a coordinator that
        # stops running must still not leave agents and ranks behind: the
        # relays end after the heartbeat timeout and the agents with them, as
        # with a coordinator that held their connections itself.
        job, port, nodes = self.job_name("relay-hang"), free_port(), 100
        common = ["--nnodes", str(nodes), "--master-addr", "127.0.0.1", "--rdzv-port", str(port),
                  "--secret-file", self.secret, "--name", job, "--heartbeat-timeout", "3",
                  "--log-dir", os.path.join(self.tmp, "logs")]
        node0 = self.start_dlaunch(common + ["--node-rank", "0", "--", "sleep", "60"],
                                   preexec_fn=limit_files(200))
        agents = [self.start_dlaunch(common + ["--node-rank", str(n), "--", "sleep", "60"])
                  for n in (1, 2)]
        # Both joined (the rest never come): node 0's relays hold them.
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and len(relay_pids()) == 0:
            time.sleep(0.1)
        self.assertGreater(len(relay_pids()), 0, "node 0 started no relay under 200 files")
        time.sleep(1)
        os.kill(node0.pid, signal.SIGSTOP)
        try:
            for agent in agents:
                _, err = agent.communicate(timeout=30)
                self.assertNotEqual(agent.returncode, 0)
                self.assertIn("lost the coordinator", err)
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and relay_pids():
                time.sleep(0.1)
            self.assertEqual(relay_pids(), [], "relays outlived a hung coordinator")
        finally:
            os.kill(node0.pid, signal.SIGKILL)
            node0.communicate()

    def test_a_check_of_more_hosts_than_node_0_may_open_files_runs_through_relays(self):
        # `dlaunch check` starts and holds its agents as a job does: past the
        # descriptor limit, relay processes hold their connections (a check
        # had no relays and refused, or ran out of files, where a job ran).
        # 40 agents on this machine, 3 pipes each, under 256 files: one
        # connection per agent more would not fit.
        hosts = self.write("check-hosts.toml", "".join(
            f'[[host]]\nname = "c{n}"\naddress = "127.0.0.{n + 1}"\ntransport = "local"\n'
            for n in range(40)))
        p = self.start_dlaunch(["check", "--hosts", hosts, "--json", "--matrix-seconds", "0",
                                "-v"], preexec_fn=limit_files(256))
        out, err = p.communicate(timeout=240)
        self.assertNoCrash(p.returncode, err)
        self.assertIn("relay processes hold the agents' connections", err)
        self.assertEqual(p.returncode, 0, f"stderr:\n{err[-3000:]}\nstdout:\n{out[-3000:]}")
        report = json.loads(out)
        self.assertEqual([h["name"] for h in report["hosts"] if h["up"]],
                         [f"c{n}" for n in range(40)])
        self.assertTrue(report["ok"])
        self.assertNoRelayLeft()

    def test_a_check_of_more_than_64_hosts_tests_a_sample_of_the_pairs(self):
        # Every pair of 70 hosts would be 69 rounds and 4,830 tests; past 64
        # hosts each host is tested against those 1, 2, 4, ... 32 places away.
        n = 70
        hosts = self.write("sampled-hosts.toml", "".join(
            f'[[host]]\nname = "s{i}"\naddress = "127.0.1.{i + 1}"\ntransport = "local"\n'
            for i in range(n)))
        p = self.start_dlaunch(["check", "--hosts", hosts, "--json", "--matrix-seconds", "0"])
        out, err = p.communicate(timeout=240)
        self.assertNoCrash(p.returncode, err)
        self.assertEqual(p.returncode, 0, f"stderr:\n{err[-3000:]}\nstdout:\n{out[-3000:]}")
        report = json.loads(out)
        self.assertTrue(report["ok"])
        self.assertEqual(report["matrix_pairs"], "sampled")
        self.assertEqual(report["matrix_strides"], [1, 2, 4, 8, 16, 32])
        tested = {(int(m["from"][1:]), int(m["to"][1:])) for m in report["matrix"]
                  if m["tested"] and m["reached"]}
        expected = {(i, (i + d) % n) for i in range(n) for s in (1, 2, 4, 8, 16, 32)
                    for d in (s, n - s)}
        self.assertEqual(len(report["matrix"]), len(expected))
        self.assertEqual(tested, expected)
        # The text report says so, and shows no table of every pair.
        p = self.start_dlaunch(["check", "--hosts", hosts, "--matrix-seconds", "0"])
        out, err = p.communicate(timeout=240)
        self.assertEqual(p.returncode, 0, f"stderr:\n{err[-3000:]}")
        self.assertIn("the hosts 1, 2, 4, 8, 16, 32 places after it", out)
        self.assertIn(f"{len(expected):,} of the {n * (n - 1):,} ordered pairs", out)
        self.assertIn(f"{len(expected):,} ok, 0 not", out)
        self.assertNotIn("from \\ to", out)

    def assertNoRelayLeft(self):
        self.assertEqual(relay_pids(), [], "relay processes outlived the job")


def limit_files(n):
    """A preexec_fn: node 0 may open n files, soft and hard."""
    return lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (n, n))


def relay_pids():
    return subprocess.run(["pgrep", "-f", "dlaunch-rendezvous-relay"],
                          capture_output=True, text=True).stdout.split()

if __name__ == "__main__":
    harness.require_binaries()
    harness.main(verbosity=2)
