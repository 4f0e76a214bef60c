"""mnist_dist started by dlaunch, the way every demo runs it: two local ranks
learn (the loss falls, an accuracy is printed) and rank 0 writes a TensorBoard
event file whose records all carry valid CRCs and hold `loss` and `accuracy`
scalars. The file is decoded here with our own CRC32C and protobuf reader."""

import glob
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
import mnist_helpers as mh  # noqa: E402


class DlaunchTrainingTest(harness.DlaunchTestCase):
    def test_two_ranks_learn_and_write_events(self):
        logdir = os.path.join(self.tmp, "tb")
        r = self.run_dlaunch(["--nproc-per-node", "2", "--", mh.MNIST, "--synthetic", "2048",
                              "--epochs", "2", "--log-interval", "4", "--dir", logdir],
                             timeout=300)
        self.assertEqual(r.returncode, 0, f"{r.stdout}\n{r.stderr}")
        # dlaunch prefixes each line with its rank; match within lines.
        losses = mh.losses(r.stdout)
        self.assertGreaterEqual(len(losses), 4, r.stdout)
        self.assertLess(losses[-1], losses[0] * 0.8, f"loss did not fall: {losses}")
        accuracy = mh.accuracies(r.stdout)
        self.assertEqual(len(accuracy), 2, r.stdout)  # one per epoch, rank 0 only
        self.assertGreater(accuracy[-1], 0.5)
        self.assertIn("throughput samples/s=", r.stdout)

        files = glob.glob(os.path.join(logdir, "events.out.tfevents.*"))
        self.assertEqual(len(files), 1, f"rank 0 alone writes events: {files}")
        self.assertRegex(os.path.basename(files[0]), r"^events\.out\.tfevents\.\d+\..+$")
        events = mh.read_events(files[0])  # raises on a bad CRC
        self.assertEqual(events[0].get("file_version"), "brain.Event:2")
        self.assertGreater(events[0]["wall_time"], 1.6e9)
        loss_events = [e for e in events if "loss" in e["scalars"]]
        acc_events = [e for e in events if "accuracy" in e["scalars"]]
        self.assertEqual(len(loss_events), len(losses))
        for event, printed in zip(loss_events, losses):
            self.assertAlmostEqual(event["scalars"]["loss"], printed, places=3)
        steps = [e["step"] for e in loss_events]
        self.assertEqual(steps, sorted(steps))
        self.assertEqual([e["step"] for e in acc_events], [1, 2])
        self.assertAlmostEqual(acc_events[-1]["scalars"]["accuracy"], accuracy[-1], places=3)


if __name__ == "__main__":
    mh.require_mnist()
    harness.require_binaries("dlaunch", "dlaunch-agent")
    harness.main(verbosity=2)
