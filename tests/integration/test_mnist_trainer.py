"""mnist_dist on its own: checkpoints resume exactly where training stopped,
the real MNIST file format (plain and gzip) is read, broken or missing data
files get an error naming the file (exit 2), and bad flags exit 2."""

import glob
import gzip
import os
import struct
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
import mnist_helpers as mh  # noqa: E402


def write_idx(directory, prefix, count, compress=False):
    """A small set in MNIST's IDX format: label k is a bright row band at 2k+4."""
    images, labels = bytearray(), bytearray()
    for i in range(count):
        label = i % 10
        image = bytearray(28 * 28)
        for row in (2 * label + 4, 2 * label + 5):
            image[row * 28 + 4:row * 28 + 24] = b"\xff" * 20
        images += image
        labels.append(label)
    files = {f"{prefix}-images-idx3-ubyte": struct.pack(">IIII", 2051, count, 28, 28) + images,
             f"{prefix}-labels-idx1-ubyte": struct.pack(">II", 2049, count) + labels}
    for name, data in files.items():
        if compress:
            with gzip.open(os.path.join(directory, name + ".gz"), "wb") as f:
                f.write(data)
        else:
            with open(os.path.join(directory, name), "wb") as f:
                f.write(data)


class TrainerTest(harness.DlaunchTestCase):
    # temp dir (self.tmp), started processes (self.procs) and clean-up come from the base class

    def mnist(self, *args):
        env = dict(os.environ, OMP_NUM_THREADS="1")
        for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
            env.pop(name, None)
        return subprocess.run([mh.MNIST, *args], capture_output=True, text=True, timeout=120,
                              env=env)

    def ranks(self, world, *args):
        procs = mh.start_ranks(world, list(args), harness.free_port())
        self.procs.extend(procs)
        outputs = []
        for rank, p in enumerate(procs):
            stdout, stderr = p.communicate(timeout=120)
            self.assertEqual(p.returncode, 0, f"rank {rank}:\n{stdout}\n{stderr}")
            outputs.append(stdout)
        return outputs[0]

    def test_resume_continues_exactly(self):
        # Two epochs straight, and one epoch + resume for the second, on two
        # ranks: the same weights, so model, momentum and epoch all came back.
        ckpt = os.path.join(self.tmp, "model.pt")
        common = ["--synthetic", "512", "--log-interval", "1000"]
        self.ranks(2, *common, "--epochs", "2", "--dump-weights", self.tmp + "/straight.{rank}")
        first = self.ranks(2, *common, "--epochs", "1", "--save-model", ckpt)
        self.assertIn("Test Epoch: 1 ", first)
        self.assertTrue(os.path.exists(ckpt))
        self.assertFalse(os.path.exists(ckpt + ".tmp"), "checkpoint not renamed into place")
        resumed = self.ranks(2, *common, "--epochs", "2", "--resume", ckpt,
                             "--dump-weights", self.tmp + "/resumed.{rank}")
        self.assertNotIn("Epoch: 1 ", resumed)
        self.assertIn("Test Epoch: 2 ", resumed)
        straight = mh.read_weights(self.tmp + "/straight.0")
        for rank in range(2):
            self.assertEqual(mh.read_weights(f"{self.tmp}/resumed.{rank}").tobytes(),
                             straight.tobytes(), f"rank {rank} differs after resume")

    def test_resume_errors(self):
        r = self.mnist("--synthetic", "64", "--resume", os.path.join(self.tmp, "none.pt"))
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("none.pt", r.stderr)
        junk = os.path.join(self.tmp, "junk.pt")
        with open(junk, "wb") as f:
            f.write(b"not a checkpoint")
        r = self.mnist("--synthetic", "64", "--resume", junk)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("junk.pt", r.stderr)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)  # no backtrace

    def test_reads_idx_files_plain_and_gzip(self):
        for compress in (False, True):
            data = os.path.join(self.tmp, f"data-{compress}")
            os.mkdir(data)
            write_idx(data, "train", 640, compress)
            write_idx(data, "t10k", 100, compress)
            r = self.mnist("--data", data, "--epochs", "2", "--log-interval", "1000")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("640 training samples", r.stdout)
            # The ten row bands are easy: two epochs learn them.
            self.assertGreater(mh.accuracies(r.stdout)[-1], 0.5, r.stdout)

    def test_missing_file_is_named(self):
        r = self.mnist("--data", self.tmp)
        self.assertEqual(r.returncode, 2)
        self.assertIn(os.path.join(self.tmp, "train-images-idx3-ubyte"), r.stderr)
        self.assertIn("MNIST", r.stderr)
        self.assertIn("--synthetic", r.stderr)
        write_idx(self.tmp, "train", 10)
        r = self.mnist("--data", self.tmp)  # the test set is missing
        self.assertEqual(r.returncode, 2)
        self.assertIn("t10k-images-idx3-ubyte", r.stderr)

    def test_corrupt_files_are_named(self):
        write_idx(self.tmp, "train", 10)
        write_idx(self.tmp, "t10k", 10)
        images = os.path.join(self.tmp, "train-images-idx3-ubyte")
        with open(images, "r+b") as f:
            f.write(b"\x00\x00\x00\x00")  # magic number
        r = self.mnist("--data", self.tmp)
        self.assertEqual(r.returncode, 2)
        self.assertIn(images, r.stderr)
        self.assertIn("not an IDX image file", r.stderr)

        write_idx(self.tmp, "train", 10)
        with open(images, "r+b") as f:
            f.truncate(16 + 5 * 28 * 28)
        r = self.mnist("--data", self.tmp)
        self.assertEqual(r.returncode, 2)
        self.assertIn("truncated", r.stderr)

        os.remove(images)
        with open(images + ".gz", "wb") as f:
            f.write(gzip.compress(b"\x00" * 4096)[:40])  # cut short
        r = self.mnist("--data", self.tmp)
        self.assertEqual(r.returncode, 2)
        self.assertIn(images + ".gz", r.stderr)

    def test_single_rank_event_file(self):
        logdir = os.path.join(self.tmp, "runs", "a")  # parents made as needed
        r = self.mnist("--synthetic", "256", "--log-interval", "1", "--dir", logdir)
        self.assertEqual(r.returncode, 0, r.stderr)
        (path,) = glob.glob(os.path.join(logdir, "events.out.tfevents.*"))
        events = mh.read_events(path)
        self.assertEqual(events[0]["file_version"], "brain.Event:2")
        losses = [e for e in events if "loss" in e["scalars"]]
        self.assertEqual(len(losses), 4)  # 256 / 64 steps, one record each
        self.assertEqual([e["step"] for e in losses], [64, 128, 192, 256])
        self.assertEqual(sum("accuracy" in e["scalars"] for e in events), 1)

    def test_bad_flags_exit_2(self):
        for args in (["--bogus"], ["--epochs"], ["--epochs", "x"], ["--batch-size", "0"],
                     ["--backend", "mpi"]):
            r = self.mnist(*args)
            self.assertEqual(r.returncode, 2, f"{args}: {r.stderr}")
            self.assertIn("usage:", r.stderr)


if __name__ == "__main__":
    mh.require_mnist()
    harness.main(verbosity=2)
