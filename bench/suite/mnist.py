"""mnist: training samples/s of examples/mnist_dist (LibTorch, 2 CPU ranks
launched by dlaunch) against the Python reference (bench/mnist/mnist_ref.py:
the same model, optimizer, batch size and loop under DistributedDataParallel)
on 2 ranks of Debian's /usr/bin/torchrun, both on the same IDX files
(bench/mnist/make_idx.py) over Gloo, one thread per rank.
It replaced bench/mnist/compare_torchrun.sh (best of 3, no interleaving)."""

import os
import re
import shutil
import statistics
import subprocess

import cleanup
import harness  # found through cleanup's sys.path entry for tests/integration
import measure
import plot
import report

NAME = "mnist"
GOAL = "dlaunch + mnist_dist at 1.5x or more the samples/s of Python DDP under torchrun"
RATIO_GOAL = 1.5
PYTHON = "/usr/bin/python3"   # Debian's, with python3-torch and numpy; not the first on PATH
TORCHRUN = "/usr/bin/torchrun"
HELPERS = os.path.join(cleanup.ROOT, "bench", "mnist")
DLAUNCH, REFERENCE = "dlaunch + mnist_dist", "torchrun + Python DDP"
RANKS, BATCH = 2, 64
RATE = re.compile(r"throughput samples/s=([0-9.]+)")
ACCURACY = re.compile(r"accuracy=([0-9.]+)")


def find_trainer(ctx):
    """mnist_dist beside the measured dlaunch, else in the tests' build or on PATH."""
    for d in (ctx.bin_dir, harness.BIN_DIR, os.path.join(cleanup.ROOT, "build", "bin")):
        path = os.path.join(d, "mnist_dist")
        if os.access(path, os.X_OK):
            return path
    return shutil.which("mnist_dist")


def run_helper(argv, timeout=300):
    """A helper script to its end, in a session of its own, stopped on any error."""
    proc = subprocess.Popen(argv, env=cleanup.marked_env(dict(os.environ)),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    finally:
        cleanup.stop(proc)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv[:2])} exited {proc.returncode}: "
                           f"{out.decode(errors='replace')[-600:]}")


class Output:
    """A peer's stdout: a file emptied before every run, whose throughput and
    accuracy lines (rank 0's) become the run's figures after it."""

    def __init__(self, path, name, log):
        self.file = open(path, "w+b")
        self.name, self.log = name, log

    def before(self):
        self.file.seek(0)
        self.file.truncate()

    def after(self, sample):
        self.file.seek(0)
        text = self.file.read().decode(errors="replace")
        rate, acc = RATE.findall(text), ACCURACY.findall(text)
        if not rate:
            raise measure.RunFailed(f"{self.name}: no `throughput samples/s=` line in its "
                                    f"output:\n{text[-600:]}")
        sample.figures["samples/s"] = float(rate[-1])
        if acc:
            sample.figures["accuracy"] = float(acc[-1])
        self.log(f"  {self.name}: {float(rate[-1]):.0f} samples/s")

    def close(self):
        self.file.close()


def peers(ctx, trainer, data, epochs, outputs):
    env = dict(os.environ, DLAUNCH_STATE_DIR=os.path.join(ctx.tmp, "state"), OMP_NUM_THREADS="1")
    args = ["--data", data, "--epochs", str(epochs), "--batch-size", str(BATCH)]

    def peer(name, argv):
        out = Output(os.path.join(ctx.tmp, f"mnist-{len(outputs)}.out"), name, ctx.log)
        outputs.append(out)
        return measure.Peer(name, argv, env, before=out.before, stdout=out.file, after=out.after)

    found = [peer(DLAUNCH, [os.path.join(ctx.bin_dir, "dlaunch"), "--nproc-per-node", str(RANKS),
                            "--", trainer, *args, "--log-interval", "100000"])]
    if os.path.exists(TORCHRUN):
        # torch 1.13 (Debian 12) on Python 3.11 cannot parse its own default
        # `--redirects 0`/`--tee 0`: a mapping for local rank 9, which does not
        # exist with 2 ranks, redirects nothing, as the default means to. The
        # ranks' stdout is then torchrun's, unprefixed.
        found.append(peer(REFERENCE, [
            TORCHRUN, "--standalone", "--nproc_per_node", str(RANKS), "--redirects", "9:1",
            "--tee", "9:1", os.path.join(HELPERS, "mnist_ref.py"), *args]))
    return found


def figure(s, key):
    return [x.figures[key] for x in s.samples if key in x.figures]


def run(ctx):
    train, test, epochs = (4000, 1000, 1) if ctx.quick else (12000, 2000, 2)
    result = report.Result(
        NAME, f"mnist_dist against Python DDP, {RANKS} CPU ranks",
        f"Training samples/s that rank 0 reports (samples of all ranks over the seconds of the "
        f"training loops, test passes left out) and wall time from spawn to reap. *{DLAUNCH}*: "
        f"`dlaunch --nproc-per-node {RANKS} -- mnist_dist --data DIR --epochs {epochs} "
        f"--batch-size {BATCH} --log-interval 100000` (examples/mnist_dist, LibTorch). "
        f"*{REFERENCE}*: `/usr/bin/torchrun --standalone --nproc_per_node {RANKS} --redirects "
        f"9:1 --tee 9:1 bench/mnist/mnist_ref.py --data DIR --epochs {epochs} --batch-size "
        f"{BATCH}` (Debian's python3-torch). Both: the same {train:,} training and {test:,} test "
        f"images from `bench/mnist/make_idx.py` (deterministic, MNIST-shaped), LeNet-style model, "
        f"SGD lr 0.01 momentum 0.5, batch {BATCH} per rank, Gloo, `OMP_NUM_THREADS=1`. "
        f"*× reference*: the peer's median samples/s over the reference's.", GOAL)
    trainer = find_trainer(ctx)
    if not trainer:
        result.verdict = "mnist_dist is not built (no LibTorch in the build)"
        return result
    # A copy, as run.py snapshots dlaunch: a build next door must not swap it mid-run.
    os.makedirs(os.path.join(ctx.tmp, "mnist-bin"), exist_ok=True)
    trainer = shutil.copy2(trainer, os.path.join(ctx.tmp, "mnist-bin", "mnist_dist"))
    data = os.path.join(ctx.tmp, "mnist-data")
    run_helper([PYTHON, os.path.join(HELPERS, "make_idx.py"), data, "--train", str(train),
                "--test", str(test)])
    outputs = []
    try:
        ps = peers(ctx, trainer, data, epochs, outputs)
        ctx.log(f"{NAME}: {', '.join(p.name for p in ps)}; {train} samples x {epochs} epoch(s)")
        stats, failures = measure.interleave(ps, ctx.runs, ctx.warmup, timeout=900, log=ctx.log)
    finally:
        for out in outputs:
            out.close()
    rates = {k: figure(s, "samples/s") for k, s in stats.items()}
    ref = rates.get(REFERENCE)
    rows = []
    for name, s in stats.items():
        r = rates[name]
        acc = figure(s, "accuracy")
        rows.append([name, f"{statistics.median(r):,.0f}", f"{min(r):,.0f}", f"{max(r):,.0f}",
                     str(len(r)),
                     f"{statistics.median(r) / statistics.median(ref):.2f}" if ref else "-",
                     f"{s.median:.2f}", f"{s.min:.2f}", f"{s.max:.2f}",
                     f"{acc[-1]:.4f}" if acc else "-"])
    result.tables.append(report.Table(
        ["peer", "median samples/s", "min samples/s", "max samples/s", "runs", "× reference",
         "median wall s", "min wall s", "max wall s", "test accuracy (last run)"], rows))
    d = rates.get(DLAUNCH)
    if d and ref:
        ratio = statistics.median(d) / statistics.median(ref)
        result.met = ratio >= RATIO_GOAL
        result.verdict = (f"mnist_dist/reference samples/s {ratio:.2f}x (goal ≥ {RATIO_GOAL}x); "
                          f"wall time reference/dlaunch "
                          f"{stats[REFERENCE].median / stats[DLAUNCH].median:.2f}x")
    else:
        result.verdict = "a peer is missing or failed"
    result.notes += report.failure_notes(failures)
    result.notes.append("Wall time includes each launcher's start, the trainers' start (LibTorch "
                        "load; Python and `import torch`), reading the data and the test passes. "
                        "torchrun's also includes up to one `--monitor_interval` (default 5 s) "
                        "after its workers have exited: its agent polls them.")
    result.notes.append("Both trainers print `throughput samples/s=` on rank 0; dlaunch "
                        "prefixes the line with `[0]`. The data are regenerated for every "
                        "suite run, identical bytes each time (fixed seed).")
    result.notes.append(f"The {RANKS} ranks share this machine's {os.cpu_count()} cores with "
                        f"their launcher and anything else running on it.")
    png = os.path.join(ctx.plots_dir, "mnist.png")
    plot.bars(png, f"training samples/s, {RANKS} CPU ranks (median, min-max)", "samples/s",
              [(k, statistics.median(r), min(r), max(r)) for k, r in rates.items()],
              enhanced=False)
    result.plots.append(("mnist: training samples/s per launcher and trainer", png))
    return result
