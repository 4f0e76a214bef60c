"""mnist_dist, the trainer every demo runs: the all-reduce is right (two ranks
with batch 32 end with exactly the weights of one rank with batch 64, and all
ranks agree), training through dlaunch learns, and the TensorBoard event file
decodes with valid CRCs (decoded here, independently of the writer)."""

import array
import glob
import os
import re
import struct
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import DlaunchTestCase, free_port  # noqa: E402

MNIST = os.path.join(harness.BIN_DIR, "mnist_dist")


def crc32c(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
    return crc ^ 0xFFFFFFFF


def masked(data):
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def varint(buf, at):
    value = shift = 0
    while True:
        b = buf[at]
        at += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, at


def fields(buf):
    """Yields (field number, wire type, value) of a protobuf message."""
    at = 0
    while at < len(buf):
        key, at = varint(buf, at)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, at = varint(buf, at)
        elif wire == 1:
            value, at = buf[at:at + 8], at + 8
        elif wire == 5:
            value, at = buf[at:at + 4], at + 4
        elif wire == 2:
            n, at = varint(buf, at)
            value, at = buf[at:at + n], at + n
        else:
            raise ValueError(f"wire type {wire}")
        yield number, wire, value


def read_events(path):
    """TFRecord records of an event file, CRC-checked; returns decoded events."""
    with open(path, "rb") as f:
        data = f.read()
    events, at = [], 0
    while at < len(data):
        header = data[at:at + 8]
        (length,) = struct.unpack("<Q", header)
        (header_crc,) = struct.unpack("<I", data[at + 8:at + 12])
        assert header_crc == masked(header), "bad length CRC"
        body = data[at + 12:at + 12 + length]
        (body_crc,) = struct.unpack("<I", data[at + 12 + length:at + 16 + length])
        assert body_crc == masked(body), "bad data CRC"
        at += 16 + length
        event = {"scalars": {}}
        for number, _, value in fields(body):
            if number == 1:
                event["wall_time"] = struct.unpack("<d", value)[0]
            elif number == 2:
                event["step"] = value
            elif number == 3:
                event["file_version"] = value.decode()
            elif number == 5:
                for _, _, v in fields(value):  # Summary.value
                    parts = {n: val for n, _, val in fields(v)}
                    event["scalars"][parts[1].decode()] = struct.unpack("<f", parts[2])[0]
        events.append(event)
    return events


def read_weights(path):
    a = array.array("f")
    with open(path, "rb") as f:
        a.frombytes(f.read())
    return a


class MnistTest(DlaunchTestCase):
    def run_ranks(self, world, batch, out, extra=()):
        """Starts `world` ranks by hand with the torchrun-style environment."""
        port = free_port()
        procs = []
        for rank in range(world):
            env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank),
                       MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), OMP_NUM_THREADS="1")
            procs.append(subprocess.Popen(
                [MNIST, "--synthetic", "1024", "--epochs", "1", "--batch-size", str(batch),
                 "--log-interval", "1000", "--dump-weights", out + ".{rank}", *extra],
                env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        self.procs.extend(procs)
        for p in procs:
            _, err = p.communicate(timeout=300)
            self.assertEqual(p.returncode, 0, err)
        return [read_weights(f"{out}.{r}") for r in range(world)]

    def test_two_ranks_of_32_equal_one_rank_of_64(self):
        one = self.run_ranks(1, 64, os.path.join(self.tmp, "one"))[0]
        two = self.run_ranks(2, 32, os.path.join(self.tmp, "two"))
        self.assertEqual(len(one), 431080)  # conv1 520 + conv2 25050 + fc1 400500 + fc2 5010
        self.assertEqual(two[0].tobytes(), two[1].tobytes(), "ranks disagree on the weights")
        diff = max(abs(a - b) for a, b in zip(one, two[0]))
        self.assertLess(diff, 1e-6, f"max |w1 - w2| = {diff}")
        # and training really moved them: not the initial weights
        initial = self.run_ranks(1, 64, os.path.join(self.tmp, "init"), ("--lr", "0"))[0]
        self.assertGreater(max(abs(a - b) for a, b in zip(one, initial)), 1e-3)

    def test_training_through_dlaunch(self):
        logdir = os.path.join(self.tmp, "tb")
        r = self.run_dlaunch(["-n", "2", "--", MNIST, "--synthetic", "2048", "--epochs", "2",
                              "--log-interval", "4", "--dir", logdir], timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)
        losses = [float(m) for m in re.findall(r"\[0\] Train Epoch: \d+ \[\d+/\d+ \(\d+%\)\]\tloss=([0-9.]+)", r.stdout)]
        self.assertGreaterEqual(len(losses), 4, r.stdout)
        self.assertLess(losses[-1], losses[0] * 0.8, f"loss did not fall: {losses}")
        accuracy = [float(m) for m in re.findall(r"accuracy=([0-9.]+)", r.stdout)]
        self.assertEqual(len(accuracy), 2)
        self.assertGreater(accuracy[-1], 0.5)
        files = glob.glob(os.path.join(logdir, "events.out.tfevents.*"))
        self.assertEqual(len(files), 1)
        events = read_events(files[0])
        self.assertEqual(events[0]["file_version"], "brain.Event:2")
        loss_events = [e for e in events if "loss" in e["scalars"]]
        acc_events = [e for e in events if "accuracy" in e["scalars"]]
        self.assertEqual(len(loss_events), len(losses))
        self.assertAlmostEqual(loss_events[-1]["scalars"]["loss"], losses[-1], places=3)
        self.assertEqual([e["step"] for e in acc_events], [1, 2])
        self.assertAlmostEqual(acc_events[-1]["scalars"]["accuracy"], accuracy[-1], places=3)

    def test_checkpoint_resume_continues_from_saved_epoch(self):
        ckpt = os.path.join(self.tmp, "model.pt")
        base = [MNIST, "--synthetic", "512", "--log-interval", "1000", "--save-model", ckpt]
        r = subprocess.run(base + ["--epochs", "1"], capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(os.path.exists(ckpt))
        r = subprocess.run(base + ["--epochs", "2", "--resume", ckpt], capture_output=True,
                           text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("Test Epoch: 1 ", r.stdout)
        self.assertIn("Test Epoch: 2 ", r.stdout)

    def test_missing_data_names_the_file(self):
        r = subprocess.run([MNIST, "--data", self.tmp], capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 2)
        self.assertIn(os.path.join(self.tmp, "train-images-idx3-ubyte"), r.stderr)
        self.assertIn("--synthetic", r.stderr)
        bad = os.path.join(self.tmp, "train-images-idx3-ubyte")
        with open(bad, "wb") as f:
            f.write(b"not an idx file at all")
        with open(os.path.join(self.tmp, "train-labels-idx1-ubyte"), "wb") as f:
            f.write(b"\x00\x00\x08\x01\x00\x00\x00\x00")
        r = subprocess.run([MNIST, "--data", self.tmp], capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 2)
        self.assertIn("not an IDX image file", r.stderr)


if __name__ == "__main__":
    harness.require_binaries("dlaunch", "dlaunch-agent", "mnist_dist")
    unittest.main(verbosity=2)
