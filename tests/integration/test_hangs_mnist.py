"""mnist_dist's own hang (--hang-at-step N --hang-rank R: rank R sleeps for ever
in hang_here(), a native call, while the others wait in the all-reduce), under
--hang-timeout: the job ends HUNG with exit 124, every rank's native stack is
kept, rank R's shows hang_here, and the verdict names it."""

import os
import shutil
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
import mnist_helpers as mh  # noqa: E402


class MnistHangTest(harness.DlaunchTestCase):
    def test_the_rank_hanging_in_a_native_call_is_named(self):
        if not (shutil.which("gdb") or shutil.which("eu-stack")):
            self.skipTest("missing: gdb or eu-stack for native stacks (gdb)")
        job = self.job_name("mnist-hang")
        r = self.run_dlaunch(["--nproc-per-node", "3", "--name", job, "--hang-timeout", "12s", "--",
                              mh.MNIST, "--synthetic", "6000", "--epochs", "5", "--hang-at-step",
                              "3", "--hang-rank", "1"], timeout=300)
        self.assertEqual(r.returncode, 124, f"{r.stdout}\n{r.stderr}")
        root = os.path.join(self.state, job, "stacks")
        stacks = os.path.join(root, sorted(d for d in os.listdir(root)
                                           if os.path.isdir(os.path.join(root, d)))[-1])
        texts = {}
        for rank in range(3):
            with open(os.path.join(stacks, f"rank-{rank}.txt")) as f:
                texts[rank] = f.read()
        if "ptrace" in texts[1] and "hang_here" not in texts[1]:
            self.skipTest("no ptrace: this machine does not let gdb attach to the ranks: "
                          + texts[1][-300:])
        self.assertIn("hang_here", texts[1])
        for rank in (0, 2):
            self.assertNotIn("hang_here", texts[rank])
            self.assertRegex(texts[rank], r"stack by (gdb|eu-stack)")
        self.assertIn("suspect: rank 1 on", r.stderr)
        self.assertNothingLeft(job)


if __name__ == "__main__":
    harness.require_binaries()
    harness.main(verbosity=2)
