"""What the elastic tests share: four SSH hosts in network namespaces (hosts
that a test can cut off), the ranks' "round= rank= group= world= master="
lines read back per round, and the job's processes in one host's namespace."""

import os
import re
import shutil
import subprocess
import tempfile
import unittest

import harness
import sshd_harness

LINE = re.compile(r"^\[(\S+):(\d+)\] round=(\d+) rank=(\d+) group=(\d+) world=(\d+) master=(\S+)$",
                  re.M)


def rounds_of(out):
    """{round: {rank: (host, group, world, master)}} from the ranks' lines."""
    found = {}
    for host, _, rnd, rank, group, world, master in LINE.findall(out):
        found.setdefault(int(rnd), {})[int(rank)] = (host, int(group), int(world), master)
    return found


class ElasticCase(unittest.TestCase):
    """Four SSH hosts (h1..h4) for the class. Each test names its job
    `self.job`, starts its dlaunch as `self.proc`, sets `self.cut` to a
    namespace whose link it takes down, and may use the directory
    `self.marks`; tearDown ends, restores and removes them."""

    JOB_PREFIX = "elastic"

    @classmethod
    def setUpClass(cls):
        sshd_harness.require_sshd()
        sshd_harness.require_netns("elastic tests (hosts that can be cut off)")
        cls.hosts = sshd_harness.SshHosts(4)
        cls.hosts.__enter__()
        cls.hosts.write_known_hosts()

    @classmethod
    def tearDownClass(cls):
        cls.hosts.close()

    def setUp(self):
        self.job = f"{self.JOB_PREFIX}-{os.getpid()}-{self._testMethodName[5:21]}"
        self.marks = tempfile.mkdtemp(prefix=f"dlaunch-{self.JOB_PREFIX}-")
        self.proc = None
        self.cut = None

    def tearDown(self):
        harness.end_job_process(self.proc, self.job)
        if self.cut:
            subprocess.run(["ip", "netns", "exec", self.cut, "ip", "link", "set", "eth0", "up"],
                           check=False)
        shutil.rmtree(self.marks, ignore_errors=True)

    def finish(self, timeout=120):
        """The job's exit code, stdout and stderr; fails past `timeout` seconds."""
        try:
            out, err = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, err = self.proc.communicate()
            self.fail(f"the job did not end in {timeout} s:\n{out}\n{err}")
        return self.proc.returncode, out, err

    def in_namespace(self, host):
        """The job's processes inside `host`'s namespace."""
        pids = subprocess.run(["ip", "netns", "pids", host["ns"]], capture_output=True,
                              text=True).stdout.split()
        return [int(p) for p in pids if int(p) in harness.processes_with_marker(self.job)]
