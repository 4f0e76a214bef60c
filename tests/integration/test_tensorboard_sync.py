"""--tensorboard-dir without shared storage: the event files that rank 0
writes on a remote SSH host (a network namespace when root) arrive under the
job's directory on the coordinator, byte-identical, also when a file is
rewritten while the job runs; `dlaunch get` prints the `tensorboard --logdir`
line. The test hosts share this machine's file system, so the remote files are
read here directly for the comparison."""

import glob
import hashlib
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
import mnist_helpers as mh  # noqa: E402
import sshd_harness  # noqa: E402


def digests(root):
    out = {}
    for path in glob.glob(os.path.join(root, "**", "*"), recursive=True):
        if os.path.isfile(path):
            with open(path, "rb") as f:
                out[os.path.relpath(path, root)] = hashlib.sha256(f.read()).hexdigest()
    return out


class TensorboardSyncTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.hosts = sshd_harness.SshHosts(1)
        cls.hosts.__enter__()
        cls.hosts.write_known_hosts()
        cls.hosts_file = cls.hosts.hosts_file([2])

    @classmethod
    def tearDownClass(cls):
        cls.hosts.close()

    def setUp(self):
        self.job = f"tb-{os.getpid()}-{self._testMethodName[-12:]}"

    def tearDown(self):
        harness.kill_coordinators(os.path.join(self.hosts.tmp, "state"))
        harness.kill_marker(self.job)

    def record(self):
        r = self.hosts.dlaunch(["get", self.job, "--json"])
        self.assertEqual(r.returncode, 0, r.stderr)
        return json.loads(r.stdout)

    @unittest.skipUnless(os.access(mh.MNIST, os.X_OK),
                         f"not built: {mh.MNIST} (needs LibTorch: libtorch-dev libgloo-dev)")
    def test_mnist_events_on_a_remote_host_arrive_byte_identical(self):
        remote = os.path.join(self.hosts.tmp, f"runs-{self.job}")
        r = self.hosts.dlaunch(["--hosts", self.hosts_file, "--name", self.job, "--tensorboard-dir",
                          remote, "--", mh.MNIST, "--synthetic", "1024", "--epochs", "2",
                          "--log-interval", "4", "--dir", remote], timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)
        job = self.record()
        copy = job["tensorboard_logdir"]
        self.assertEqual(copy, os.path.join(job["dir"], "tensorboard"))
        expected = digests(remote)
        self.assertEqual(len(expected), 1, expected)
        self.assertTrue(next(iter(expected)).startswith("events.out.tfevents."))
        self.assertEqual(digests(copy), expected)
        self.assertEqual(job["nodes"][0]["host"], "h1")
        self.assertIn(f"tensorboard --logdir {copy}", self.hosts.dlaunch(["get", self.job]).stdout)

    def test_a_rewritten_file_is_sent_again_whole(self):
        remote = os.path.join(self.hosts.tmp, f"rewrite-{self.job}")
        script = (f'[ "$RANK" = 0 ] || exit 0; mkdir -p {remote}/sub; '
                  f'head -c 300000 /dev/urandom > {remote}/sub/a; sleep 1.2; '
                  f'printf short > {remote}/sub/a; head -c 5000 /dev/urandom > {remote}/b; '
                  f'sleep 1.2; head -c 70000 /dev/urandom >> {remote}/b; : > {remote}/empty')
        r = self.hosts.dlaunch(["--hosts", self.hosts_file, "--name", self.job, "--tensorboard-dir",
                          remote, "--", "sh", "-c", script], timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        copy = self.record()["tensorboard_logdir"]
        self.assertEqual(sorted(digests(copy)), ["b", "empty", "sub/a"])
        self.assertEqual(digests(copy), digests(remote))
        with open(os.path.join(copy, "sub", "a"), "rb") as f:
            self.assertEqual(f.read(), b"short")


if __name__ == "__main__":
    harness.require_binaries()
    harness.main(verbosity=2)
