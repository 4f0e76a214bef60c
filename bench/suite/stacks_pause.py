"""stacks-pause: what a `dlaunch stacks` call costs a running job, at 8 and 32
ranks: the longest a rank went without a line while a call ran (its ranks
print a line every 2 ms, stamped with their own clock), next to the longest
outside the calls in the same job (the machine's own noise), how long each
call took, and whether any line of the ranks' logs was lost or torn."""

import os
import re
import statistics
import subprocess
import time
from dataclasses import dataclass, field

import cleanup
import hangs
import harness  # found through cleanup's sys.path entry for tests/integration
import plot
import report

NAME = "stacks-pause"
PYTHON = "/usr/bin/python3"
GOAL_MS = 100.0                  # ms: the longest a stacks call may pause a rank
GOAL = (f"a `dlaunch stacks` call pauses no rank for more than {GOAL_MS:.0f} ms, and loses or "
        f"tears no line of a rank's output")
SIZES = [8, 32]
CALLS = 5                        # `dlaunch stacks JOB` calls per job
PERIOD = 0.002                   # s a rank sleeps after each line
SETTLE = 1.0                     # s of output from every rank before the first look
QUIET = 1.0                      # s before each call and after the last: the baseline's time
START_LIMIT = 120.0              # s for every rank to be up
CALL_LIMIT = 120.0               # s for one `dlaunch stacks`
STOP_WAIT = 60                   # s `dlaunch stop --wait` waits for the ranks to end
POLL = 0.05                      # s between two looks at the ready files

# The rank: prints "rank R seq S t T" (T: time.monotonic(), the bench's clock
# too) every PERIOD s, says it is up (a file in <run>/ready) after its first
# line; on SIGTERM (`dlaunch stop`) it writes how many lines it printed to
# <run>/printed/R, so that lines lost at the end are counted too. No torch.
RANK = r"""
import os, signal, sys, time
run, period = sys.argv[1], float(sys.argv[2])
rank = int(os.environ["RANK"])
stop = []
signal.signal(signal.SIGTERM, lambda *_: stop.append(True))
seq = 0
while not stop:
    print(f"rank {rank} seq {seq} t {time.monotonic():.6f}", flush=True)
    seq += 1
    if seq == 1:
        open(os.path.join(run, "ready", str(rank)), "w").close()
    time.sleep(period)
with open(os.path.join(run, "printed", str(rank)), "w") as f:
    f.write(f"{seq}\n")
"""

LINE = re.compile(rb"rank (\d+) seq (\d+) t (\d+\.\d{6})")


class NotStarted(Exception):
    pass


@dataclass
class Case:
    ranks: int
    samples: list = field(default_factory=list)   # dict per measured run


def wait_ready(run, n, coordinator_log):
    """Until every rank has printed its first line; NotStarted when time runs out."""
    deadline = time.monotonic() + START_LIMIT
    while hangs.ready_count(run) < n:
        if time.monotonic() > deadline:
            raise NotStarted(f"{hangs.ready_count(run)} of {n} ranks up after "
                             f"{START_LIMIT:.0f} s: {tail(coordinator_log)}")
        time.sleep(POLL)


def tail(path, lines=4):
    try:
        with open(path, errors="replace") as f:
            return " | ".join(f.read().splitlines()[-lines:])
    except OSError:
        return f"(no {os.path.basename(path)})"


def read_rank_log(path, rank, printed):
    """(times of the lines in order, with whether each follows its predecessor's
    sequence number; lines read, lost, torn, out of order). Lost: sequence numbers
    below what the rank printed (its count at SIGTERM, else its last line's) with
    no line; torn: a line not exactly "rank R seq S t T", or a last one without
    its newline; out of order: a line whose number is not above the one before."""
    with open(path, "rb") as f:
        parts = f.read().split(b"\n")
    torn = 1 if parts.pop() else 0
    lines, seen, disorder, last = [], set(), 0, -1
    for raw in parts:
        m = LINE.fullmatch(raw)
        if not m or int(m[1]) != rank:
            torn += 1
            continue
        seq = int(m[2])
        if seq <= last:
            disorder += 1
        lines.append((float(m[3]), seq == last + 1))
        seen.add(seq)
        last = max(last, seq)
    expected = printed if printed is not None else last + 1
    lost = sum(1 for s in range(expected) if s not in seen)
    return lines, len(parts), lost, torn, disorder


def gaps(lines, calls, begin, end):
    """(the largest gap in s between two consecutive lines that overlaps a call,
    per call; the largest gap within [begin, end] that overlaps none)."""
    during, outside = [0.0] * len(calls), 0.0
    for (a, _), (b, consecutive) in zip(lines, lines[1:]):
        if not consecutive:   # a line lost in between: not a pause of the rank
            continue
        hit = False
        for i, c in enumerate(calls):
            if a < c["end"] and b > c["start"]:
                during[i] = max(during[i], b - a)
                hit = True
        if not hit and a >= begin and b <= end:
            outside = max(outside, b - a)
    return during, outside


def printed_count(run, rank):
    try:
        with open(os.path.join(run, "printed", str(rank))) as f:
            return int(f.read())
    except (OSError, ValueError):
        return None


def run_job(ctx, work, n, job, rank_py):
    """One run: a detached job of n ranks, SETTLE s of output from each, CALLS
    `dlaunch stacks` calls QUIET s apart (each timed, its Python frames counted),
    `dlaunch stop`, then every rank log read; whatever is left of the job ended."""
    state = os.path.join(work, "state")
    env = cleanup.marked_env(dict(os.environ, DLAUNCH_STATE_DIR=state))
    exe = os.path.join(ctx.bin_dir, "dlaunch")
    run = hangs.new_run_dir(work, job)
    os.makedirs(os.path.join(run, "printed"))
    job_dir = os.path.join(state, job)

    def dlaunch(*args, timeout=CALL_LIMIT):
        return subprocess.run([exe, *args], env=env, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=timeout,
                              start_new_session=True)

    try:
        r = dlaunch("-d", "--nproc-per-node", str(n), "--name", job, "--", PYTHON, rank_py,
                    run, str(PERIOD), timeout=60)
        if r.returncode != 0:
            raise NotStarted(f"dlaunch -d exited {r.returncode}: {r.stderr.strip()[-400:]}")
        wait_ready(run, n, os.path.join(job_dir, "coordinator.log"))
        time.sleep(SETTLE)
        begin, calls = time.monotonic(), []
        for _ in range(CALLS):
            time.sleep(QUIET)
            start = time.monotonic()
            r = dlaunch("stacks", job)
            end = time.monotonic()
            files, python, _ = hangs.count_stacks(hangs.latest_stacks(state, job), n, -1)
            calls.append({"start": start, "end": end, "exit": r.returncode, "files": files,
                          "python": python})
        time.sleep(QUIET)
        end = time.monotonic()
        r = dlaunch("stop", job, "--wait", str(STOP_WAIT), timeout=STOP_WAIT + 30)
        if r.returncode != 0:
            raise RuntimeError(f"dlaunch stop exited {r.returncode}: {r.stderr.strip()[-400:]}")
        left = len(harness.wait_no_marker(job, 10))
        ranks = []
        for rank in range(n):
            printed = printed_count(run, rank)
            lines, read, lost, torn, disorder = read_rank_log(
                os.path.join(job_dir, f"rank-{rank}.log"), rank, printed)
            during, outside = gaps(lines, calls, begin, end)
            ranks.append({"during": during, "outside": outside, "lines": read, "lost": lost,
                          "torn": torn, "disorder": disorder, "counted": printed is not None})
        return {"calls": calls, "ranks": ranks, "left": left}
    finally:
        harness.kill_coordinators(state)   # a detached coordinator is nobody's child
        harness.kill_marker(job)           # its agent and ranks


def pauses(sample):
    """Each rank's largest gap (s) during any call of the run."""
    return [max(r["during"]) for r in sample["ranks"]]


def summary(s):
    """A run's figures in one line, for the log."""
    p, b = pauses(s), [r["outside"] for r in s["ranks"]]
    calls = ", ".join(f"{c['end'] - c['start']:.2f}" for c in s["calls"])
    return (f"stacks calls {calls} s; largest gap during a call {max(p) * 1000:.1f} ms (median "
            f"over ranks {statistics.median(p) * 1000:.1f}), outside {max(b) * 1000:.1f} ms "
            f"(median {statistics.median(b) * 1000:.1f}); lost {sum(r['lost'] for r in s['ranks'])}"
            f", torn {sum(r['torn'] for r in s['ranks'])}, out of order "
            f"{sum(r['disorder'] for r in s['ranks'])}")


def measure_all(ctx, cases, work, rank_py):
    """Every size once per round, warm-up rounds first; a size that fails is
    left out from then on, with why."""
    failures, k = {}, 0
    for round_ in range(ctx.warmup + ctx.runs):
        what = "warm-up" if round_ < ctx.warmup else f"run {round_ - ctx.warmup + 1}"
        for c in cases:
            if c.ranks in failures:
                continue
            k += 1
            job = f"bench-stacks-{os.getpid()}-{k}"
            try:
                s = run_job(ctx, work, c.ranks, job, rank_py)
            except Exception as e:  # a run that cannot start or end: that size is left out
                failures[c.ranks] = str(e)
                ctx.log(f"  {c.ranks} ranks: failed, left out: {e}")
                continue
            ctx.log(f"  {what}: {c.ranks} ranks: {summary(s)}")
            if round_ >= ctx.warmup:
                c.samples.append(s)
    return failures


@dataclass
class Figures:
    """One size's figures over its measured runs, every rank of every run pooled."""
    runs: int
    pause: list       # s: each rank's largest gap during a call
    baseline: list    # s: each rank's largest gap outside the calls
    durations: list   # s: each call
    call_gaps: list   # s: each call's largest gap over the ranks
    python: int       # fewest ranks with Python frames in one call
    files: int        # fewest rank files in one call
    exits: list
    lines: int
    lost: int
    torn: int
    disorder: int
    uncounted: int    # ranks that wrote no count at SIGTERM: lost lines at the end not seen
    left: int

    @property
    def broken(self):
        return self.lost + self.torn + self.disorder


def figures(case):
    runs = case.samples
    ranks = [r for s in runs for r in s["ranks"]]
    calls = [c for s in runs for c in s["calls"]]
    return Figures(
        runs=len(runs), pause=[p for s in runs for p in pauses(s)],
        baseline=[r["outside"] for r in ranks],
        durations=[c["end"] - c["start"] for c in calls],
        call_gaps=[max(r["during"][i] for r in s["ranks"])
                   for s in runs for i in range(len(s["calls"]))],
        python=min(c["python"] for c in calls), files=min(c["files"] for c in calls),
        exits=sorted({c["exit"] for c in calls}), lines=sum(r["lines"] for r in ranks),
        lost=sum(r["lost"] for r in ranks), torn=sum(r["torn"] for r in ranks),
        disorder=sum(r["disorder"] for r in ranks),
        uncounted=sum(not r["counted"] for r in ranks), left=sum(s["left"] for s in runs))


def ratio(a, b):
    return f"{a / b:.2f}" if b > 0 else "-"


def pause_rows(figs):
    rows = []
    for n, f in sorted(figs.items()):
        pmax, pmed = max(f.pause), statistics.median(f.pause)
        bmax, bmed = max(f.baseline), statistics.median(f.baseline)
        rows.append([str(n), str(f.runs), report.ms(pmax), report.ms(pmed), report.ms(bmax),
                     report.ms(bmed), ratio(pmax, bmax), ratio(pmed, bmed), f"{f.lines:,}",
                     str(f.lost), str(f.torn), str(f.disorder), str(f.left)])
    return rows


def call_rows(figs):
    rows = []
    for n, f in sorted(figs.items()):
        d = f.durations
        rows.append([str(n), str(len(d)), f"{statistics.median(d):.2f}", f"{min(d):.2f}",
                     f"{max(d):.2f}", ", ".join(f"{x:.2f}" for x in d),
                     ", ".join(report.ms(g) for g in f.call_gaps), f"{f.python} of {n}",
                     f"{f.files} of {n}", ", ".join(map(str, f.exits))])
    return rows


def judge(figs, sizes):
    missing = [n for n in sizes if n not in figs]
    said, over, noisy, broken = [], [], [], []
    for n, f in sorted(figs.items()):
        pmax, bmax = max(f.pause), max(f.baseline)
        said.append(f"{n} ranks: largest pause {report.ms(pmax)} ms (median over ranks "
                    f"{report.ms(statistics.median(f.pause))}), {ratio(pmax, bmax)}x the "
                    f"largest gap outside the calls ({report.ms(bmax)} ms); stacks call median "
                    f"{statistics.median(f.durations):.2f} s; {f.lost} lost, {f.torn} torn, "
                    f"{f.disorder} out of order of {f.lines:,} lines")
        if pmax * 1000 > GOAL_MS:
            (noisy if bmax * 1000 >= GOAL_MS else over).append(f"{n} ranks ({report.ms(pmax)} ms)")
        if f.broken:
            broken.append(f"{n} ranks")
    missed = []
    if over:
        missed.append(f"a pause over {GOAL_MS:.0f} ms at " + ", ".join(over))
    if broken:
        missed.append("lines lost, torn or out of order at " + ", ".join(broken))
    if missed:
        return False, "missed: " + "; ".join(missed) + ". " + "; ".join(said)
    if noisy:
        return None, (f"a gap over {GOAL_MS:.0f} ms during a call at " + ", ".join(noisy)
                      + f", where the gaps outside the calls were as long (the machine's own "
                      f"noise). " + "; ".join(said))
    if missing:
        return None, f"no figures at {', '.join(map(str, missing))} ranks. " + "; ".join(said)
    return True, "; ".join(said)


def plots(ctx, result, figs):
    series = {}
    for name, key in (("during a stacks call", "pause"), ("outside the calls", "baseline")):
        pts = []
        for n, f in sorted(figs.items()):
            v = [x * 1000 for x in getattr(f, key)]
            pts.append((n, statistics.median(v), min(v), max(v)))
        if pts:
            series[f"{name}: each rank's largest gap"] = pts
    if not series:
        return
    png = os.path.join(ctx.plots_dir, "stacks-pause.png")
    plot.lines(png, "stacks-pause: each rank's largest gap between two lines, ms "
               "(median over ranks, min-max)", "ranks (log scale)", "ms", series, logx=True)
    result.plots.append(("stacks-pause: largest gap between two lines against ranks", png))


def run(ctx):
    sizes = [8] if ctx.quick else SIZES
    work = os.path.join(ctx.tmp, "stacks-pause")
    os.makedirs(work)
    rank_py = os.path.join(work, "rank.py")
    with open(rank_py, "w") as f:
        f.write(RANK)
    cases = [Case(n) for n in sizes]
    ctx.log(f"{NAME}: {', '.join(f'{n} ranks' for n in sizes)}, {CALLS} stacks calls each, "
            f"{ctx.warmup} warm-up, {ctx.runs} run(s)")
    failures = measure_all(ctx, cases, work, rank_py)
    figs = {c.ranks: figures(c) for c in cases if c.samples}
    met, verdict = judge(figs, sizes)
    period_ms = PERIOD * 1000
    result = report.Result(
        NAME, "the pause a `dlaunch stacks` call costs a running job",
        f"Each run starts a detached job on this machine, `dlaunch -d --nproc-per-node N --name "
        f"JOB -- {PYTHON} rank.py` (state dir `$DLAUNCH_STATE_DIR` of the run's own), of plain "
        f"Python ranks (no torch) that each print `rank R seq S t T` (S counting from 0, T its "
        f"`time.monotonic()`) and sleep {period_ms:.0f} ms, over and over. Once every rank has "
        f"printed and {SETTLE:.0f} s more have passed, the bench runs `dlaunch stacks JOB` "
        f"{CALLS} times, {QUIET:.0f} s apart (and {QUIET:.0f} s before the first and after the "
        f"last), then `dlaunch stop JOB`, and reads `$DLAUNCH_STATE_DIR/JOB/rank-R.log`. "
        f"*Pause*: a rank's largest gap between the stamps of two consecutive lines where that "
        f"gap overlaps a stacks call (from the call's spawn to its exit, taken by the bench on "
        f"the same monotonic clock only to place the calls); max and median over the ranks. "
        f"*Baseline*: the same rank's largest gap in the same job outside the calls (from the "
        f"start of the first quiet {QUIET:.0f} s to the end of the last), i.e. the machine's "
        f"own noise. *Lost*: "
        f"sequence numbers below the count each rank wrote to a file at its SIGTERM with no "
        f"line in its log; *torn*: lines that are not exactly that format with the log's own "
        f"rank; *out of order*: a line whose number is not above the previous one's.",
        GOAL, met=met, verdict=verdict,
        tables=[report.Table(["ranks", "runs", "pause: max ms", "median ms", "baseline: max ms",
                              "median ms", "max / baseline max", "median / baseline median",
                              "lines checked", "lost", "torn", "out of order",
                              "processes left"], pause_rows(figs),
                             "Largest gap between two lines of a rank (ms), during the stacks "
                             "calls and outside them, over the ranks of all measured runs:"),
                report.Table(["ranks", "calls", "call: median s", "min s", "max s",
                              "each call s", "largest gap in each call ms",
                              "ranks with Python frames", "rank files", "exit"],
                             call_rows(figs), "The `dlaunch stacks` calls (fewest ranks with "
                             "Python frames over the calls):")])
    if ctx.quick:
        result.notes.append(f"--quick: {', '.join(map(str, sizes))} ranks only.")
    result.notes.append(
        f"The gap is an upper bound on the pause: it holds the rank's own {period_ms:.0f} ms "
        f"sleep, the faulthandler dump (written from a signal handler into a file of its own, "
        f"not the rank's output) and any wait for a CPU. All of it, the {max(sizes)} ranks "
        f"each printing a line then sleeping {period_ms:.0f} ms, the agent, the coordinator "
        f"and the stacks call (its 0.3 s /proc sample of every rank) share this machine's "
        f"{os.cpu_count()} cores, which the baseline shows when the calls are not running.")
    tools = [t for t in ("py-spy", "eu-stack", "gdb")
             if any(os.access(os.path.join(d, t), os.X_OK)
                    for d in os.environ.get("PATH", "").split(os.pathsep) if d)]
    result.notes.append(
        "Stacks taken with faulthandler (the ranks are Python); "
        + ("py-spy is not on this machine's PATH, so no rank was stopped by ptrace"
           if "py-spy" not in tools else "py-spy is on PATH too: each rank also gets "
           "`py-spy dump --native`, which stops it while it reads") + ".")
    uncounted = sum(f.uncounted for f in figs.values())
    if uncounted:
        result.notes.append(f"{uncounted} rank(s) wrote no count at SIGTERM: lines lost at "
                            f"their end would not be seen.")
    result.notes += [f"{n} ranks: failed, left out: `{v[:400]}`" for n, v in failures.items()]
    plots(ctx, result, figs)
    return result
