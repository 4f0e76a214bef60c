"""`dlaunch top node` and `dlaunch top job` (issue 13, item 5), as Arena's
`arena top node` / `arena top job`.

a. top node against two SSH hosts the test starts (network namespaces when
   root, loopback ports otherwise; no GPUs here): one row per host with 0 GPUs,
   `Allocated/Total GPUs: 0/0 (0%)`, exit 0; --json parses
   with the documented fields; -d has a block per host; no agent is left
   running. A host whose sshd is not there is notready, with exit 1.
b. top job while a local job runs: the job's row (RUNNING, 2 ranks) and a row
   per rank; plain `dlaunch top` the same; --json parses; a job name that names
   nothing exits 1."""

import json
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import sshd_harness  # noqa: E402
from harness import DlaunchTestCase, wait_for  # noqa: E402


def detail(r):
    return f"\nexit {r.returncode}\nstdout:\n{r.stdout[-4000:]}\nstderr:\n{r.stderr[-3000:]}"


class TopNodeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not sshd_harness.have_sshd():
            raise unittest.SkipTest(sshd_harness.MISSING_SSHD)
        if os.geteuid() != 0 and not os.path.isdir("/run/sshd"):
            raise unittest.SkipTest("not root: starting sshd servers needs root (or an existing "
                                    "/run/sshd)")
        cls.hosts = sshd_harness.SshHosts(2)
        cls.hosts.__enter__()
        if not cls.hosts.netns:
            print("note: not root or no `ip netns`: sshd servers listen on loopback ports instead")
        cls.hosts.write_known_hosts()
        cls.hosts_file = cls.hosts.hosts_file([1, 1])

    @classmethod
    def tearDownClass(cls):
        cls.hosts.close()

    def top(self, *args, hosts_file=None, timeout=120):
        r = subprocess.run([harness.DLAUNCH, "top", "node", "--hosts",
                            hosts_file or self.hosts_file, *args],
                           capture_output=True, text=True, timeout=timeout, env=self.hosts.env())
        self.addCleanup(self.assert_no_agent_left)
        return r

    def assert_no_agent_left(self):
        if not self.hosts.netns:
            return
        left = {}

        def none_left():
            left.clear()
            for h in self.hosts.hosts:
                pids = harness.agents_in(h["ns"])
                if pids:
                    left[h["name"]] = pids
            return not left
        self.assertTrue(wait_for(none_left, timeout=10), f"agents still running: {left}")

    def test_a_two_hosts_without_gpus(self):
        r = self.top()
        self.assertEqual(r.returncode, 0, detail(r))
        print(r.stdout, end="")
        lines = r.stdout.splitlines()
        self.assertEqual(lines[0].split(),
                         ["NAME", "IPADDRESS", "ROLE", "STATUS", "GPU(Total)", "GPU(Allocated)"])
        rows = [line.split() for line in lines[1:3]]
        self.assertEqual(rows, [[h["name"], h["address"], role, "ready", "0", "0"]
                                for h, role in zip(self.hosts.hosts, ["master", "worker"])])
        self.assertEqual(lines[3], "-" * 89)
        self.assertEqual(lines[4:], ["Allocated/Total GPUs: 0/0 (0%)"])

    def test_b_json_has_the_documented_fields(self):
        r = self.top("--json")
        self.assertEqual(r.returncode, 0, detail(r))
        try:
            doc = json.loads(r.stdout)
        except ValueError as e:
            self.fail(f"--json output does not parse: {e}{detail(r)}")
        self.assertEqual(doc["gpus_total"], 0)
        self.assertEqual(doc["gpus_allocated"], 0)
        self.assertEqual(doc["allocated_pct"], 0)
        self.assertEqual([h["name"] for h in doc["hosts"]], [h["name"] for h in self.hosts.hosts])
        for row, h in zip(doc["hosts"], self.hosts.hosts):
            self.assertEqual(row["address"], h["address"])
            self.assertEqual(row["status"], "ready", row)
            self.assertEqual(row["error"], "")
            self.assertEqual(row["gpus_total"], 0)
            self.assertEqual(row["gpus_allocated"], 0)
            self.assertEqual(row["gpus"], [])
            for key in ("role", "driver_version", "cuda_version"):
                self.assertIn(key, row)

    def test_c_details_have_a_block_per_host(self):
        r = self.top("-d")
        self.assertEqual(r.returncode, 0, detail(r))
        for h in self.hosts.hosts:
            self.assertIn(f"NAME:       {h['name']}\n", r.stdout, detail(r))
            self.assertIn(f"Total GPUs In Node {h['name']}:      0\n", r.stdout, detail(r))
            self.assertIn(f"Allocated GPUs In Node {h['name']}:  0 (0%)\n", r.stdout, detail(r))
        self.assertTrue(r.stdout.endswith("Allocated/Total GPUs: 0/0 (0%)\n"),
                        detail(r))

    def test_d_a_host_without_sshd_is_notready_and_exits_1(self):
        h1 = self.hosts.hosts[0]
        path = os.path.join(self.hosts.tmp, "with-missing.toml")
        with open(path, "w") as f:
            f.write(f'[[host]]\nname = "{h1["name"]}"\naddress = "{h1["address"]}"\n'
                    f'port = {h1["port"]}\nuser = "root"\n\n'
                    f'[[host]]\nname = "gone"\naddress = "127.0.0.1"\n'
                    f'port = {harness.free_port()}\nuser = "root"\n')
        r = self.top("--ssh-timeout", "5", hosts_file=path)
        self.assertEqual(r.returncode, 1, detail(r))
        rows = {line.split()[0]: line.split() for line in r.stdout.splitlines()[1:3]}
        self.assertEqual(rows[h1["name"]][3:], ["ready", "0", "0"], detail(r))
        self.assertEqual(rows["gone"][3:], ["notready", "-", "-"], detail(r))
        self.assertIn("notready: gone: ", r.stdout, detail(r))


class TopJobTest(DlaunchTestCase):
    def test_a_running_job_its_row_and_its_ranks(self):
        job = self.job_name("top")
        p = self.start_dlaunch(["-n", "2", "--name", job, "--", "sleep", "30"])
        self.assertTrue(wait_for(lambda: len(harness.processes_with_marker(job)) >= 2))

        def running():
            r = self.run_dlaunch(["list"])
            return any(line.split()[:2] == [job, "RUNNING"] for line in r.stdout.splitlines())
        self.assertTrue(wait_for(running))

        for args in (["top", "job", "--interval", "0.2"], ["top", "--interval", "0.2"],
                     ["top", "job", job, "--interval", "0.2"]):
            r = self.run_dlaunch(args)
            self.assertEqual(r.returncode, 0, detail(r))
            lines = r.stdout.splitlines()
            self.assertEqual(lines[0].split(),
                             ["NAME", "STATUS", "HOSTS", "RANKS", "GPUS", "CPU%", "MEMORY"],
                             detail(r))
            row = next((line.split() for line in lines[1:] if line.split()[:1] == [job]), None)
            self.assertIsNotNone(row, detail(r))
            self.assertEqual(row[1:4], ["RUNNING", "1", "2"], detail(r))
            self.assertEqual(row[4], "0", detail(r))  # no GPUs here, and its ranks hold none
            header = lines.index(next(l for l in lines if l.split()[:2] == ["JOB", "RANK"]))
            ranks = sorted(line.split()[1] for line in lines[header + 1:]
                           if line.split()[:1] == [job])
            self.assertEqual(ranks, ["0", "1"], detail(r))
            self.assertNotIn("not sampled", r.stdout, detail(r))

        r = self.run_dlaunch(["top", "job", job, "--json", "--interval", "0.2"])
        self.assertEqual(r.returncode, 0, detail(r))
        try:
            doc = json.loads(r.stdout)
        except ValueError as e:
            self.fail(f"--json output does not parse: {e}{detail(r)}")
        self.assertEqual(len(doc["jobs"]), 1, doc)
        j = doc["jobs"][0]
        self.assertEqual((j["name"], j["status"], j["ranks"]), (job, "RUNNING", 2), j)
        self.assertEqual(j["processes"], 2, j)
        self.assertEqual(j["gpus"], 0, j)
        self.assertEqual(j["hosts_not_sampled"], [], j)
        self.assertGreater(j["memory_bytes"], 0, j)
        self.assertEqual(sorted(x["rank"] for x in doc["ranks"]), [0, 1], doc)
        for x in doc["ranks"]:
            self.assertEqual(x["job"], job)
            self.assertEqual(x["command"], "sleep")
            self.assertIsNone(x["gpu"])
            for key in ("pid", "host", "cpu_pct", "rss_bytes"):
                self.assertIn(key, x)

        r = self.run_dlaunch(["stop", job])
        self.assertEqual(r.returncode, 0, detail(r))
        p.communicate(timeout=60)
        self.assertNothingLeft(job)

    def test_b_no_such_job_and_help(self):
        r = self.run_dlaunch(["top", "job", "no-such-job", "--interval", "0"])
        self.assertEqual(r.returncode, 1, detail(r))
        self.assertIn("no job named 'no-such-job'", r.stderr)
        r = self.run_dlaunch(["top", "--interval", "0"])
        self.assertEqual(r.returncode, 0, detail(r))
        self.assertIn("no running jobs", r.stdout)
        for args, flag in ((["top", "--help"], "--interval"), (["top", "node", "--help"], "--details"),
                           (["top", "job", "--help"], "--json")):
            r = self.run_dlaunch(args)
            self.assertEqual(r.returncode, 0, detail(r))
            self.assertIn(flag, r.stdout, detail(r))
        r = self.run_dlaunch(["top", "node"])
        self.assertEqual(r.returncode, 2, detail(r))
        self.assertIn("no hosts", r.stderr)


if __name__ == "__main__":
    harness.require_binaries()
    harness.main(verbosity=2)
