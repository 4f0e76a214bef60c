"""`dlaunch check` (issue 12, item 9) on the two-region namespaces of
netns_topology.py: h0 (node 0) in region A, h1 and h2 in region B, each listed
in the hosts file by a management address that only the coordinator reaches.

a. Healthy hosts: exit 0; --json parses, with a row per host (all up, with
   their facts), MASTER_ADDR = h0's region address, and a matrix where every
   pair reached each other on the region addresses; --nccl on hosts without
   GPUs says why it did not run and does not fail; the text output has the
   same. No agent is left running on any host.
b. h0 dropping TCP from h1 (except ssh): exit 1, the pair h1 -> h0 is shown
   blocked, and no MASTER_ADDR is chosen.
c. h2 with a 64 MiB /dev/shm: a warning names h2 and the size."""

import json
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import netns_topology  # noqa: E402

HOSTS = [("h0", "A"), ("h1", "B"), ("h2", "B")]


class CheckTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.topo = netns_topology.Topology(HOSTS)
        cls.topo.__enter__()
        cls.hosts_file = cls.topo.hosts_file()

    @classmethod
    def tearDownClass(cls):
        cls.topo.close()

    def check(self, *args, timeout=120):
        r = subprocess.run([harness.DLAUNCH, "check", "--hosts", self.hosts_file, *args],
                           capture_output=True, text=True, timeout=timeout, env=self.topo.env())
        self.addCleanup(self.assert_no_agent_left)
        return r

    def assert_no_agent_left(self):
        left = {}

        def none_left():
            left.clear()
            for h in self.topo.hosts:
                pids = harness.agents_in(h["ns"])
                if pids:
                    left[h["name"]] = pids
            return not left
        ok = harness.wait_for(none_left, timeout=10)
        self.assertTrue(ok, f"agents still running after check: {left}")

    def detail(self, r):
        return f"\nexit {r.returncode}\nstdout:\n{r.stdout[-4000:]}\nstderr:\n{r.stderr[-3000:]}"

    def parse(self, r):
        try:
            return json.loads(r.stdout)
        except ValueError as e:
            self.fail(f"--json output does not parse: {e}{self.detail(r)}")

    def test_a_healthy_hosts_exit_0_with_a_row_per_host_and_every_pair_reached(self):
        topo = self.topo
        h0 = topo.hosts[0]
        r = self.check("--json", "--nccl")
        detail = self.detail(r)
        self.assertEqual(r.returncode, 0, detail)
        doc = self.parse(r)
        self.assertTrue(doc["ok"], detail)
        self.assertEqual([h["name"] for h in doc["hosts"]], [h["name"] for h in topo.hosts])
        for row in doc["hosts"]:
            h = topo.host(row["name"])
            self.assertTrue(row["up"], f"{row['name']}: {row.get('error')}")
            self.assertEqual(row["address"], h["mgmt_addr"])
            self.assertGreaterEqual(row["cpus"], 1)
            self.assertTrue(row["kernel"], row)
            self.assertTrue(row["agent_version"], row)
            # The host's architecture and libc, and the agent built for it.
            self.assertEqual(row["arch"], os.uname().machine, row)
            self.assertEqual(row["agent_arch"], row["arch"], row)
            self.assertRegex(row["libc"], r"^glibc 2\.\d+$", row)
            self.assertGreater(row["shm_bytes"], 64 << 20, row)
            self.assertIn("clock_skew_us", row)
            # The address peers test it at: its region address on its own interface.
            self.assertEqual(row["test_address"], h["addr"], row)
            self.assertEqual(row["interface"], h["ifname"], row)
            # Every host is a namespace on a veth alike: none is told apart as
            # "virtual" by the accident of its peer's index.
            self.assertFalse([w for w in row["warnings"] if "virtual interface" in w], row)
            # Which python3 a login finds, and where torch was looked for.
            if row["python"]:
                self.assertTrue(os.path.isabs(row["python_path"]), row)
                if not row["torch"]:
                    self.assertTrue([w for w in row["warnings"] if row["python_path"] in w], row)
        self.assertTrue(doc["master"]["chosen"], detail)
        self.assertEqual(doc["master"]["address"], h0["addr"], detail)
        pairs = {(p["from"], p["to"]): p for p in doc["matrix"]}
        names = [h["name"] for h in topo.hosts]
        self.assertEqual(sorted(pairs), sorted((a, b) for a in names for b in names if a != b))
        for (a, b), p in sorted(pairs.items()):
            self.assertTrue(p["reached"], f"{a} -> {b}: {p}")
            self.assertEqual(p["address"], topo.host(b)["addr"])
            self.assertGreater(p["bytes"], 0, f"{a} -> {b}: {p}")
            self.assertGreater(p["bits_per_second"], 0, f"{a} -> {b}: {p}")
        self.assertEqual(doc["problems"], [], detail)
        # --nccl on hosts without GPUs: said, not failed.
        if not any(row["gpus"] for row in doc["hosts"]):
            self.assertFalse(doc["nccl"]["ran"], detail)
            self.assertIn("no host that is up has a GPU", doc["nccl"]["skipped"], detail)
            self.assertEqual(doc["nccl"]["results"], [], detail)

        r = self.check()
        detail = self.detail(r)
        self.assertEqual(r.returncode, 0, detail)
        self.assertIn("hosts: 3 of 3 up", r.stdout, detail)
        self.assertIn(f"MASTER_ADDR {h0['addr']}", r.stdout, detail)
        self.assertIn("result: a job can launch on these 3 hosts", r.stdout, detail)
        self.assertNotIn("BLOCKED", r.stdout, detail)

    def test_b_node0_firewalled_from_h1_exits_1_showing_the_blocked_pair(self):
        topo = self.topo
        h0, h1 = topo.host("h0"), topo.host("h1")
        topo.block(h0, h1["addr"], except_ports=[22])
        try:
            r = self.check("--json")
            text = self.check()
        finally:
            topo.unblock(h0)
        detail = self.detail(r)
        self.assertEqual(r.returncode, 1, detail)
        doc = self.parse(r)
        self.assertFalse(doc["ok"], detail)
        self.assertFalse(doc["master"]["chosen"], detail)
        self.assertTrue(all(row["up"] for row in doc["hosts"]), detail)
        pairs = {(p["from"], p["to"]): p for p in doc["matrix"]}
        self.assertFalse(pairs[("h1", "h0")]["reached"], pairs[("h1", "h0")])
        self.assertEqual(pairs[("h1", "h0")]["address"], h0["addr"])
        self.assertTrue(pairs[("h2", "h0")]["reached"], pairs[("h2", "h0")])
        self.assertTrue(pairs[("h1", "h2")]["reached"], pairs[("h1", "h2")])
        self.assertTrue(any(p.startswith("h1 -> h0") for p in doc["problems"]), doc["problems"])

        detail = self.detail(text)
        self.assertEqual(text.returncode, 1, detail)
        self.assertIn("BLOCKED", text.stdout, detail)
        self.assertRegex(text.stdout, rf"h1 -> h0 \({h0['addr']}\)", detail)
        self.assertIn("a job could not launch", text.stdout, detail)

    def test_c_small_dev_shm_is_warned_about(self):
        topo = self.topo
        topo.mount_small_shm("h2")
        r = self.check("--json")
        detail = self.detail(r)
        self.assertEqual(r.returncode, 0, detail)  # a warning, not a reason to refuse
        doc = self.parse(r)
        rows = {row["name"]: row for row in doc["hosts"]}
        self.assertEqual(rows["h2"]["shm_bytes"], 64 << 20, detail)
        self.assertTrue(any("/dev/shm is 64 MiB" in w and "SIGBUS" in w
                            for w in rows["h2"]["warnings"]), rows["h2"])
        self.assertFalse(any("/dev/shm" in w for w in rows["h0"]["warnings"]), rows["h0"])
        text = self.check()
        self.assertIn("h2: /dev/shm is 64 MiB (under 1 GiB)", text.stdout, self.detail(text))


if __name__ == "__main__":
    netns_topology.require_topology()
    harness.require_binaries()
    harness.main()
