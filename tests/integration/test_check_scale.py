"""`dlaunch check` of 2,000 hosts whose coordinator may open only 1,024 files
(issue 29): the check starts and holds its agents as a job does, so relay
processes hold the agents' connections, the MASTER_ADDR probe goes in rounds
within the job's window of connections, and every host is reported.

The hosts are a Slurm allocation of 2,000 nodes on this machine: the real
dlaunch-agent runs once per node as a task of one job step, started by
fake_srun.py in place of srun (which needs a cluster). Everything runs in a
network namespace of its own, with only loopback, and a mount namespace whose
/etc/hosts names the nodes n0001..n2000 at 127.0.0.1, so that the namespace's
TCP counters are the check's alone: the test reads ListenOverflows and
ListenDrops there, which count a connection a listener's full accept queue
dropped.

Needs root (namespaces, the bind mount) and a hard limit of about 4,100 open
files for the stand-in srun, which holds every task's stdin; skips (77)
without them."""

import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

NODES = 2000
NODE0_FILES = 1024
FAKE_SRUN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fake_srun.py")
TIMEOUT = 300

# Inside the namespaces: loopback up, the nodes' names, the stand-in srun's
# server (with this test's file limit), then dlaunch under node 0's limit, and
# the namespace's TCP counters at the end.
SCRIPT = r"""
set -eu
ip link set lo up
mount --bind "$T/etc-hosts" /etc/hosts
/usr/bin/python3 "$FAKE_SRUN" --serve "$T/srun.sock" > "$T/srun.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 200); do grep -q ready "$T/srun.log" && break; sleep 0.05; done
rc=0
(ulimit -n "$NODE0_FILES"; exec env PATH="$T/bin" "$DLAUNCH" check --json -v \
    --matrix-seconds 0 --timeout 240 --python /bin/true > "$T/out" 2> "$T/err") || rc=$?
for _ in $(seq 200); do grep -q "step ended" "$T/srun.log" && break; sleep 0.05; done
cat /proc/net/netstat > "$T/netstat"
exit $rc
"""


def skip(why):
    harness.skip_file(why)


def tcp_ext(netstat_text):
    """The TcpExt counters of /proc/net/netstat, by name."""
    lines = [line.split() for line in netstat_text.splitlines()]
    for names, values in zip(lines[::2], lines[1::2]):
        if names and names[0] == "TcpExt:":
            return dict(zip(names[1:], map(int, values[1:])))
    return {}


class CheckScaleTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="dlaunch-check-scale-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        os.mkdir(os.path.join(self.tmp, "bin"))
        # srun on the (only) PATH dlaunch and its agents get: no container
        # engine or python3 there, so no host spends its time on them.
        os.symlink(FAKE_SRUN, os.path.join(self.tmp, "bin", "srun"))
        with open(os.path.join(self.tmp, "etc-hosts"), "w") as f:
            f.write("127.0.0.1 localhost\n")
            f.writelines(f"127.0.0.1 n{n:04d}\n" for n in range(1, NODES + 1))

    def run_check(self):
        env = dict(os.environ, T=self.tmp, FAKE_SRUN=FAKE_SRUN, DLAUNCH=harness.DLAUNCH,
                   NODE0_FILES=str(NODE0_FILES), FAKE_SRUN_SOCKET=f"{self.tmp}/srun.sock",
                   SLURM_JOB_ID="4242", SLURM_JOB_NODELIST=f"n[0001-{NODES}]",
                   SLURM_NNODES=str(NODES), DLAUNCH_STATE_DIR=f"{self.tmp}/state")
        p = subprocess.Popen(["unshare", "--net", "--mount", "sh", "-c", SCRIPT], env=env,
                             start_new_session=True, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
        try:
            script_output, _ = p.communicate(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.communicate()
            self.fail(f"the check did not end within {TIMEOUT} s; stderr:\n{self.read('err')[-3000:]}")
        return p.returncode, script_output

    def read(self, name):
        try:
            with open(os.path.join(self.tmp, name)) as f:
                return f.read()
        except OSError:
            return ""

    def test_a_check_of_2000_hosts_under_1024_files_runs_through_relays(self):
        code, script_output = self.run_check()
        out, err = self.read("out"), self.read("err")
        self.assertEqual(code, 0, f"script:\n{script_output[-2000:]}\nstderr:\n{err[-3000:]}\n"
                                  f"srun:\n{self.read('srun.log')[-2000:]}")
        self.assertIn("relay processes hold the agents' connections", err)
        report = json.loads(out)
        self.assertTrue(report["ok"])
        names = [f"n{n:04d}" for n in range(1, NODES + 1)]
        self.assertEqual([h["name"] for h in report["hosts"]], names)
        self.assertEqual([h["name"] for h in report["hosts"] if h["up"]], names)
        # The MASTER_ADDR every host reached, and the sampled pairs all tested
        # and reached: each host and the hosts 1, 2, 4, ... 512 places away
        # either way (pair_schedule.h: strides below half the hosts).
        self.assertTrue(report["master"]["chosen"], report["master"])
        self.assertEqual(report["matrix_pairs"], "sampled")
        strides = report["matrix_strides"]
        self.assertEqual(strides, [2 ** k for k in range(10)])
        expected = {(i, (i + d) % NODES) for i in range(NODES) for s in strides
                    for d in (s, NODES - s)}
        tested = {(int(m["from"][1:]) - 1, int(m["to"][1:]) - 1) for m in report["matrix"]
                  if m["tested"] and m["reached"]}
        self.assertEqual(tested, expected)
        # Every agent ended by itself, in time, with 0: none was killed.
        self.assertNotIn("did not exit in time", err)
        self.assertIn("step ended with 0", self.read("srun.log"))
        # No connection was dropped at a full accept queue: node 0's agent's
        # probe port, the rendezvous, the relays and the agents' pair tests.
        counters = tcp_ext(self.read("netstat"))
        self.assertIn("ListenOverflows", counters)
        self.assertEqual(counters["ListenOverflows"], 0, counters)
        self.assertEqual(counters["ListenDrops"], 0, counters)


if __name__ == "__main__":
    harness.require_binaries()
    if os.geteuid() != 0:
        skip("not root: network and mount namespaces need root")
    for tool, package in (("unshare", "util-linux"), ("ip", "iproute2"), ("mount", "mount")):
        if shutil.which(tool) is None:
            skip(f"missing: {tool} ({package})")
    why = harness.open_files_reason(2 * NODES + 100, "the stand-in srun (a pipe and a pidfd "
                                    "per task)")
    if why:
        skip(why)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    harness.main(verbosity=2)
