"""Elastic jobs with a real trainer: mnist_dist over SSH hosts in network
namespaces, each host with its own disk for --checkpoint-dir (a tmpfs mounted
in its sshd's mount namespace, so no host sees another's checkpoint). A spare
takes node 1 after its agent is killed and training resumes from node 0's
checkpoint; node 0's link goes down and the spare becomes node 0, gets the
checkpoint from the coordinator's copy, and the job finishes its epochs."""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
import mnist_helpers as mh  # noqa: E402
from elastic_case import ElasticCase, rounds_of  # noqa: E402
from harness import wait_for  # noqa: E402

# Each rank says where it runs, marks ROUND-RANK in the directory of $0 (the
# test's, on this machine's disk), then becomes mnist_dist.
WRAP = ('echo "round=$TORCHELASTIC_RESTART_COUNT rank=$RANK group=$GROUP_RANK '
        'world=$WORLD_SIZE master=$MASTER_ADDR"; : > "$0/$TORCHELASTIC_RESTART_COUNT-$RANK"; '
        'exec "$@"')
EPOCHS = 3


class ElasticMnistTest(ElasticCase):
    @classmethod
    def setUpClass(cls):
        mh.require_mnist()
        super().setUpClass()
        cls.hosts_file = cls.hosts.hosts_file([1, 1, 1, 1], name="spare.toml",
                                              host_extra={"h4": "spare = true"})

    JOB_PREFIX = "emnist"

    def setUp(self):
        super().setUp()
        # The same path on every host, each a disk of its own.
        self.disk = tempfile.mkdtemp(prefix="dlaunch-emnist-disk-")
        self.mounted = []
        for h in self.hosts.hosts:
            self.in_mounts(h, "mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", self.disk)
            self.mounted.append(h)

    def tearDown(self):
        super().tearDown()
        for h in self.mounted:
            self.in_mounts(h, "umount", "-l", self.disk, check=False)
        shutil.rmtree(self.disk, ignore_errors=True)

    @staticmethod
    def in_mounts(h, *cmd, check=True):
        """Runs `cmd` in the mount namespace of `h`'s sshd (and so of its agents)."""
        r = subprocess.run(["nsenter", "-t", str(h["proc"].pid), "-m", "--", *cmd],
                           capture_output=True, text=True)
        if check:
            assert r.returncode == 0, f"{' '.join(cmd)} in {h['name']}: {r.stderr}"

    def start(self):
        cmd = [harness.DLAUNCH, "--hosts", self.hosts_file, "--name", self.job, "--grace", "2",
               "--heartbeat-timeout", "4", "--max-restarts", "2", "--checkpoint-dir", self.disk,
               "--", "/bin/sh", "-c", WRAP, self.marks, mh.MNIST, "--synthetic", "6000",
               "--epochs", str(EPOCHS), "--log-interval", "1000", "--no-cuda"]
        self.proc = subprocess.Popen(cmd, env=self.hosts.env(), stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)

    def cached_checkpoint(self):
        return os.path.join(self.hosts.tmp, "state", self.job, "checkpoint", "mnist_dist.pt")

    def wait_first_checkpoint(self):
        """Until the coordinator holds epoch 1's checkpoint: mid-training."""
        self.assertTrue(wait_for(lambda: os.path.exists(self.cached_checkpoint()), 120),
                        "no checkpoint reached the coordinator")

    def rank_pid(self, rank):
        """The pid of round 0's rank `rank`, mnist_dist itself."""
        want = {f"RANK={rank}".encode(), b"TORCHELASTIC_RESTART_COUNT=0"}
        seen = []
        for pid in harness.processes_with_marker(self.job):
            try:
                with open(f"/proc/{pid}/environ", "rb") as f:
                    env = set(f.read().split(b"\0"))
            except OSError:
                continue
            seen.append((pid, harness.exe_name(pid), sorted(e for e in env if e.startswith(
                (b"RANK=", b"TORCHELASTIC_RESTART_COUNT=")))))
            if harness.exe_name(pid) == "mnist_dist" and want <= env:
                return pid
        self.fail(f"no mnist_dist of rank {rank} in round 0 among {seen}")

    def finish(self):
        return super().finish(timeout=240)

    def assert_trained_to_the_end(self, out, resumed_on):
        resumed = re.findall(r"^\[(\S+):0\] mnist_dist: resuming at epoch (\d+) from (\S+) "
                             r"\(round 1\)$", out, re.M)
        self.assertEqual(len(resumed), 1, out)
        host, epoch, path = resumed[0]
        self.assertEqual(host, resumed_on)
        self.assertGreaterEqual(int(epoch), 2, out)  # from a checkpoint, not from scratch
        self.assertEqual(path, os.path.join(self.disk, "mnist_dist.pt"))
        final = re.search(rf"^\[\S+:0\] Test Epoch: {EPOCHS} loss=\S+ accuracy=([0-9.]+)$", out,
                          re.M)
        self.assertIsNotNone(final, out)
        self.assertGreater(float(final.group(1)), 0.5, out)
        print(f"resumed at epoch {epoch} on {host}; final accuracy {final.group(1)}")

    def test_spare_takes_node_1_and_training_resumes_from_the_checkpoint(self):
        self.start()
        self.wait_first_checkpoint()
        os.kill(harness.parent_of(self.rank_pid(1)), signal.SIGKILL)
        code, out, err = self.finish()
        self.assertEqual(code, 0, err)
        self.assertRegex(err, r"dlaunch: h4 takes node 1 of h2 \((lost the agent of h2|the agent on "
                              r"h2 exited)")
        self.assertNotIn("the new node 0", err)  # node 0 stayed: nothing to carry
        rounds = rounds_of(out)
        self.assertEqual({r: v[0] for r, v in rounds[1].items()}, {0: "h1", 1: "h4", 2: "h3"})
        self.assert_trained_to_the_end(out, "h1")
        self.assertEqual(self.in_namespace(self.hosts.hosts[1]), [])
        self.assertEqual(harness.wait_no_marker(self.job, 30), [])

    def test_node_0_link_down_the_spare_becomes_node_0_with_the_checkpoint(self):
        self.start()
        self.wait_first_checkpoint()
        self.cut = self.hosts.hosts[0]["ns"]
        subprocess.run(["ip", "netns", "exec", self.cut, "ip", "link", "set", "eth0", "down"],
                       check=True)
        code, out, err = self.finish()
        self.assertEqual(code, 0, err)
        self.assertIn("dlaunch: h4 takes node 0 of h1", err)
        self.assertRegex(err, r"dlaunch: h4 is the new node 0: sent it the last checkpoint "
                              r"\(1 file, [0-9.]+ MiB, [0-9.]+ s\)")
        rounds = rounds_of(out)
        self.assertEqual(rounds[0][0][3], self.hosts.hosts[0]["address"])
        self.assertEqual(rounds[1][0][:2], ("h4", 0))
        for rank in (0, 1, 2):  # MASTER_ADDR probed again: the new node 0's address
            self.assertEqual(rounds[1][rank][3], self.hosts.hosts[3]["address"], out)
        # h4's own disk had no checkpoint before the coordinator sent it.
        self.assert_trained_to_the_end(out, "h4")
        got = json.loads(self.hosts.dlaunch(["get", self.job, "--json"]).stdout)
        self.assertEqual(got["checkpoint_dir"], self.disk)
        self.assertEqual(got["checkpoint_copy"], os.path.dirname(self.cached_checkpoint()))


if __name__ == "__main__":
    harness.main()
