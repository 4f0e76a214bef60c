"""hangs: a job that goes silent (one rank stopped with SIGSTOP, every other
rank blocked in `waiting_for_peers()`), at 8, 64 and 512 ranks: how long
after the hang timeout dlaunch prints its verdict naming the suspect, and how
many ranks' stack files hold their Python frames; next to it torchrun on the
same hang, and what it did in the same time."""

import math
import os
import signal
import statistics
import subprocess
import threading
import time
from dataclasses import dataclass, field

import cleanup
import harness  # found through cleanup's sys.path entry for tests/integration
import plot
import report

NAME = "hangs"
PYTHON = "/usr/bin/python3"
TORCHRUN = "/usr/bin/torchrun"
DLAUNCH = "dlaunch"
HANG_TIMEOUT = 5                 # s: dlaunch's --hang-timeout
GOAL_S, GOAL_RANKS = 5.0, 512
GOAL = (f"at {GOAL_RANKS} ranks the verdict naming the suspect under {GOAL_S:.0f} s after the "
        f"hang timeout, with every rank that is not stopped showing its Python frames")
SIZES = [8, 64, 512]
LAYOUTS = {8: (1, 8), 64: (8, 8), 512: (8, 64)}   # ranks: (nodes, ranks per node)
TORCHRUN_SIZES = [8, 64]
SETTLE = 2.0                     # s of steady output once every rank is up, before the fault
WATCH = HANG_TIMEOUT + 10        # s after the fault that torchrun is watched
START_LIMIT = 240.0              # s for every rank to be up
END_LIMIT = 60.0                 # s after the hang timeout for dlaunch's node 0 to end
POLL = 0.02                      # s between two looks at a launcher's exit

# The rank: says it is up (a file in <run>/ready), prints a line every 0.2 s;
# once <run>/go exists the suspect stops itself and every other rank blocks
# for ever, so the job is silent from then on. No torch: 512 ranks of it
# would not fit on the machine this runs on.
RANK = r"""
import os, signal, sys, threading, time
run, suspect = sys.argv[1], int(sys.argv[2])
rank = int(os.environ["RANK"])
go = os.path.join(run, "go")


def waiting_for_peers():
    threading.Event().wait()


open(os.path.join(run, "ready", str(rank)), "w").close()
step = 0
while True:
    if os.path.exists(go):
        if rank == suspect:
            os.kill(os.getpid(), signal.SIGSTOP)
        waiting_for_peers()
    print(f"rank {rank} step {step}", flush=True)
    step += 1
    time.sleep(0.2)
"""


class NotStarted(Exception):
    pass


def suspect_of(n):
    """The rank that stops: on a node other than node 0 where there are several."""
    return n * 5 // 8 + 1


def layout(n):
    nodes, per = LAYOUTS[n]
    return f"{per} ranks" if nodes == 1 else f"{nodes} nodes x {per} ranks"


@dataclass
class Case:
    ranks: int
    launcher: str
    samples: list = field(default_factory=list)   # dict per measured run

    @property
    def label(self):
        return (self.ranks, self.launcher)


class Lines:
    """A pipe's lines, each with the time.monotonic() at which it came, read on a
    thread of its own (a launcher must never block on a full pipe)."""

    def __init__(self, pipe):
        self.pipe, self.lines = pipe, []
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        try:
            for raw in iter(self.pipe.readline, b""):
                self.lines.append((time.monotonic(), raw.decode(errors="replace").rstrip("\n")))
        except (OSError, ValueError):
            pass

    def first(self, test):
        return next(((t, line) for t, line in list(self.lines) if test(line)), (None, None))

    def close(self):
        self.thread.join(5)
        self.pipe.close()


def stop_all(procs):
    """SIGTERM to every process group at once (a launcher stops its ranks and
    agents as on a user's Ctrl-C), then SIGKILL to the groups still there after
    5 s: cleanup.stop for many, without its grace once per process."""
    live = [p for p in procs if p.poll() is None]
    for p in live:
        try:
            os.killpg(p.pid, signal.SIGTERM)
        except OSError:
            pass
    deadline = time.monotonic() + 5
    while any(p.poll() is None for p in live) and time.monotonic() < deadline:
        time.sleep(0.05)
    harness.kill_process_groups(live)


def new_run_dir(work, job):
    run = os.path.join(work, job)
    os.makedirs(os.path.join(run, "ready"))
    return run


def ready_count(run):
    return len(os.listdir(os.path.join(run, "ready")))


def wait_ready(run, n, procs, tails):
    """Until every rank is up; NotStarted when a launcher exits first or time runs out."""
    deadline = time.monotonic() + START_LIMIT
    while ready_count(run) < n:
        gone = [i for i, p in enumerate(procs) if p.poll() is not None]
        if gone:
            i = gone[0]
            raise NotStarted(f"launcher {i} exited {procs[i].returncode} with {ready_count(run)} "
                             f"of {n} ranks up: {tails(i)}")
        if time.monotonic() > deadline:
            raise NotStarted(f"{ready_count(run)} of {n} ranks up after {START_LIMIT:.0f} s")
        time.sleep(0.05)


def fault(run):
    """The fault: <run>/go appears; its time is the moment the job goes silent."""
    at = time.monotonic()
    open(os.path.join(run, "go"), "w").close()
    return at


def dlaunch_argvs(ctx, n, job, rank_py, run, secret):
    """node 0's command line, then the other nodes' (manual mode on this machine)."""
    nodes, per = LAYOUTS[n]
    exe = os.path.join(ctx.bin_dir, "dlaunch")
    prog = ["--", PYTHON, rank_py, run, str(suspect_of(n))]
    own = ["--name", job, "--hang-timeout", f"{HANG_TIMEOUT}s"]
    if nodes == 1:
        return [[exe, "--nproc-per-node", str(per), *own, *prog]]
    common = ["--nnodes", str(nodes), "--master-addr", "127.0.0.1", "--rdzv-port",
              str(harness.free_port()), "--secret-file", secret, "--nproc-per-node", str(per)]
    return ([[exe, *common, "--node-rank", "0", *own, *prog]]
            + [[exe, *common, "--node-rank", str(i), *prog] for i in range(1, nodes)])


def latest_stacks(state, job):
    root = os.path.join(state, job, "stacks")
    dirs = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
    if not dirs:
        raise RuntimeError(f"no stacks under {root}")
    return os.path.join(root, dirs[-1])


def count_stacks(stacks, n, suspect):
    """(rank files, ranks other than the suspect whose header says "stack by
    faulthandler", whether the suspect's header says state T)."""
    files = python = 0
    stopped = False
    for r in range(n):
        try:
            with open(os.path.join(stacks, f"rank-{r}.txt")) as f:
                header = f.readline()
        except OSError:
            continue
        files += 1
        if r == suspect:
            stopped = "state T" in header
        elif "stack by faulthandler" in header:
            python += 1
    return files, python, stopped


def run_dlaunch(ctx, work, n, job, rank_py, secret):
    """One run: every node started, every rank up, SETTLE s of output, the fault;
    then node 0's stderr timed until it ends, the stacks counted, and whatever
    is left of the job ended."""
    state = os.path.join(work, "state")
    env = dict(os.environ, DLAUNCH_STATE_DIR=state)
    run = new_run_dir(work, job)
    suspect = suspect_of(n)
    procs, errs, node0_err = [], [], None
    try:
        for i, argv in enumerate(dlaunch_argvs(ctx, n, job, rank_py, run, secret)):
            if i == 0:
                p = subprocess.Popen(argv, env=cleanup.marked_env(env), stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, start_new_session=True)
                node0_err = Lines(p.stderr)
            else:
                path = os.path.join(run, f"node-{i}.err")
                errs.append(path)
                with open(path, "wb") as f:
                    p = subprocess.Popen(argv, env=cleanup.marked_env(env),
                                         stdout=subprocess.DEVNULL, stderr=f,
                                         start_new_session=True)
            procs.append(p)

        def tail(i):
            node0 = " | ".join(line for _, line in node0_err.lines[-6:])
            if i == 0:
                return node0
            with open(errs[i - 1], errors="replace") as f:
                return " | ".join(f.read().splitlines()[-4:]) + f" (node 0: {node0})"

        wait_ready(run, n, procs, tail)
        time.sleep(SETTLE)
        gone = [i for i, p in enumerate(procs) if p.poll() is not None]
        if gone:
            raise NotStarted(f"launcher {gone[0]} exited {procs[gone[0]].returncode} before the "
                             f"fault: {tail(gone[0])}")
        at = fault(run)
        node0 = procs[0]
        deadline = at + HANG_TIMEOUT + END_LIMIT
        while node0.poll() is None and time.monotonic() < deadline:
            time.sleep(POLL)
        if node0.poll() is None:
            raise RuntimeError(f"node 0 still running {HANG_TIMEOUT + END_LIMIT:.0f} s after "
                               f"the fault: {tail(0)}")
        ended = time.monotonic()
        node0_err.close()
        detected, _ = node0_err.first(lambda line: "no rank made progress" in line)
        verdict, line = node0_err.first(lambda line: line.startswith("  suspect:"))
        if verdict is None:
            raise RuntimeError(f"node 0 exited {node0.returncode} with no suspect line: {tail(0)}")
        others = [p.wait(30) for p in procs[1:]]   # TimeoutExpired: handled as a failure
        files, python, stopped = count_stacks(latest_stacks(state, job), n, suspect)
        return {"detected": detected - at - HANG_TIMEOUT if detected else math.nan,
                "verdict": verdict - at - HANG_TIMEOUT, "ended": ended - at - HANG_TIMEOUT,
                "exit": node0.returncode, "others": others, "files": files, "python": python,
                "stopped": stopped, "named": f"suspect: rank {suspect} on " in line,
                "left": len(harness.wait_no_marker(job, 10))}
    finally:
        stop_all(procs)
        harness.kill_marker(job)   # a rank a killed agent left, the stopped one among them
        if node0_err:
            node0_err.close()


def torchrun_argv(n, rank_py, run):
    # torch 1.13 (Debian 12) on Python 3.11 cannot parse its own default
    # `--redirects 0`/`--tee 0` (see faults.py), nor any 0 or 3 (Python 3.11's
    # IntFlag leaves them out of iteration), and a mapping's local rank is one
    # digit. So: local rank 9's stderr, which these ranks never write, to a file
    # and the terminal; every other stream as the default leaves it.
    return [TORCHRUN, "--standalone", "--nproc_per_node", str(n), "--redirects", "9:2",
            "--tee", "9:2", "--no_python", PYTHON, rank_py, run, str(suspect_of(n))]


def run_torchrun(ctx, work, n, job, rank_py):
    """One run: the same hang under torchrun, watched for WATCH s after the fault
    (what it printed, whether it ended), then it and all it started killed."""
    run = new_run_dir(work, job)
    # torchrun sets no marker of its own: its environment carries one to its ranks.
    env = cleanup.marked_env(dict(os.environ, DLAUNCH_JOB=job))
    proc = subprocess.Popen(torchrun_argv(n, rank_py, run), env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    out, err = Lines(proc.stdout), Lines(proc.stderr)
    try:
        wait_ready(run, n, [proc], lambda _: " | ".join(l for _, l in err.lines[-4:]))
        time.sleep(SETTLE)
        if proc.poll() is not None:
            raise NotStarted(f"torchrun exited {proc.returncode} before the fault")
        at = fault(run)
        ended = None
        while time.monotonic() < at + WATCH:
            if ended is None and proc.poll() is not None:
                ended = time.monotonic()
            time.sleep(POLL)
        # What it printed after the fault: on stderr anything; on stdout anything
        # but a rank's own line that was on its way as the fault came.
        said = [line for t, line in err.lines if t > at]
        said += [line for t, line in out.lines
                 if t > at and not (line.startswith("rank ") and t < at + 1)]
        return {"said": said, "ended": None if ended is None else ended - at,
                "exit": proc.returncode}
    finally:
        harness.kill_marker(job)   # torchrun and its ranks, the stopped one too
        cleanup.stop(proc)
        out.close()
        err.close()


def measure_all(ctx, cases, work, rank_py, secret):
    """Every case once per round, warm-up rounds first (A B A B ...); a case that
    fails is left out from then on, with why."""
    failures, n = {}, 0
    for round_ in range(ctx.warmup + ctx.runs):
        what = "warm-up" if round_ < ctx.warmup else f"run {round_ - ctx.warmup + 1}"
        for c in cases:
            if c.label in failures:
                continue
            n += 1
            job = f"bench-hangs-{os.getpid()}-{n}"
            try:
                if c.launcher == DLAUNCH:
                    s = run_dlaunch(ctx, work, c.ranks, job, rank_py, secret)
                    ctx.log(f"  {what}: {c.ranks} ranks, dlaunch: verdict {s['verdict']:.2f} s "
                            f"after the hang timeout (detected {s['detected']:.2f} s, ended "
                            f"{s['ended']:.2f} s), exit {s['exit']}, Python frames "
                            f"{s['python']} of {c.ranks - 1}, suspect named: {s['named']}")
                else:
                    s = run_torchrun(ctx, work, c.ranks, job, rank_py)
                    ctx.log(f"  {what}: {c.ranks} ranks, torchrun: {len(s['said'])} line(s) "
                            f"after the fault, "
                            + ("still running" if s["ended"] is None
                               else f"ended {s['ended']:.2f} s after it (exit {s['exit']})")
                            + f" at {WATCH} s")
            except Exception as e:  # a run that cannot start or end: that case is left out
                failures[c.label] = str(e)
                ctx.log(f"  {c.ranks} ranks, {c.launcher}: failed, left out: {e}")
                continue
            if round_ >= ctx.warmup:
                c.samples.append(s)
    return failures


def spread(values):
    v = [x for x in values if math.isfinite(x)]
    if not v:
        return ["-", "-", "-"]
    return [f"{statistics.median(v):.2f}", f"{min(v):.2f}", f"{max(v):.2f}"]


def dlaunch_rows(cases):
    rows = []
    for c in cases:
        if c.launcher != DLAUNCH or not c.samples:
            continue
        s = c.samples
        python = min(x["python"] for x in s)
        files = min(x["files"] for x in s)
        exits = sorted({x["exit"] for x in s})
        left = sum(x["left"] for x in s)
        rows.append([str(c.ranks), layout(c.ranks), str(len(s)),
                     *spread([x["verdict"] for x in s]),
                     spread([x["detected"] for x in s])[0], spread([x["ended"] for x in s])[0],
                     f"{python} of {c.ranks - 1}", f"{files} of {c.ranks}",
                     f"{sum(x['named'] for x in s)} of {len(s)}",
                     ", ".join(map(str, exits)), str(left)])
    return rows


def torchrun_said(s):
    if not s["said"]:
        return "nothing"
    return f"{len(s['said'])} line(s), first: `{s['said'][0][:120]}`"


def torchrun_rows(cases):
    rows = []
    for c in cases:
        if c.launcher == DLAUNCH or not c.samples:
            continue
        s = c.samples
        silent = sum(not x["said"] for x in s)
        running = sum(x["ended"] is None for x in s)
        ended = [f"{x['ended']:.2f} s (exit {x['exit']})" for x in s if x["ended"] is not None]
        rows.append([str(c.ranks), str(len(s)), f"{silent} of {len(s)}",
                     next((torchrun_said(x) for x in s if x["said"]), "nothing"),
                     f"{running} of {len(s)}", ", ".join(ended) or "-"])
    return rows


def judge(cases, sizes):
    d = {c.ranks: c for c in cases if c.launcher == DLAUNCH and c.samples}
    missing = [n for n in sizes if n not in d]
    short = [n for n, c in d.items()
             if any(x["python"] < n - 1 or not x["named"] or not x["stopped"] for x in c.samples)]
    said = [f"{n} ranks: verdict {statistics.median(x['verdict'] for x in c.samples):.2f} s after "
            f"the hang timeout (median), Python frames on {min(x['python'] for x in c.samples)} "
            f"of {n - 1} running ranks" for n, c in sorted(d.items())]
    for c in cases:
        if c.launcher != DLAUNCH and c.samples:
            silent = all(not x["said"] for x in c.samples)
            running = all(x["ended"] is None for x in c.samples)
            said.append(f"torchrun at {c.ranks} ranks: "
                        + ("printed nothing" if silent else "printed something")
                        + (" and was still running" if running else ", ended in some runs")
                        + f" {WATCH} s after the fault")
    missed = []
    if short:
        missed.append("a suspect not named, or ranks without Python frames, at "
                      + ", ".join(map(str, sorted(short))) + " ranks")
    if GOAL_RANKS in d:
        m = statistics.median(x["verdict"] for x in d[GOAL_RANKS].samples)
        if m >= GOAL_S:
            missed.append(f"verdict under {GOAL_S:.0f} s at {GOAL_RANKS} ranks ({m:.2f} s)")
    elif GOAL_RANKS in sizes:
        missed.append(f"{GOAL_RANKS} ranks failed")
    if missed:
        return False, "missed: " + "; ".join(missed) + ". " + "; ".join(said)
    if GOAL_RANKS not in sizes or missing:
        return None, (f"{GOAL_RANKS} ranks not run. " if GOAL_RANKS not in sizes else
                      f"no figures at {', '.join(map(str, missing))} ranks. ") + "; ".join(said)
    return True, "; ".join(said)


def plots(ctx, result, cases):
    series = {}
    for key, name in (("verdict", "verdict (suspect line)"), ("ended", "dlaunch ended")):
        pts = []
        for c in cases:
            if c.launcher == DLAUNCH and c.samples:
                v = [x[key] for x in c.samples]
                pts.append((c.ranks, statistics.median(v), min(v), max(v)))
        if pts:
            series[f"{name}: s after the hang timeout"] = pts
    if not series:
        return
    png = os.path.join(ctx.plots_dir, "hangs.png")
    plot.lines(png, f"hangs: s after the hang timeout ({HANG_TIMEOUT} s) (median, min-max)",
               "ranks (log scale)", "s", series, logx=True)
    result.plots.append(("hangs: seconds after the hang timeout against ranks", png))


def run(ctx):
    sizes = [8] if ctx.quick else SIZES
    work = os.path.join(ctx.tmp, "hangs")
    os.makedirs(work)
    rank_py = os.path.join(work, "rank.py")
    with open(rank_py, "w") as f:
        f.write(RANK)
    secret = os.path.join(work, "secret")
    with open(os.open(secret, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
        f.write(f"bench-hangs-{os.getpid()}\n")
    cases = []
    for n in sizes:
        cases.append(Case(n, DLAUNCH))
        if n in TORCHRUN_SIZES and os.path.exists(TORCHRUN):
            cases.append(Case(n, "torchrun"))
    ctx.log(f"{NAME}: {', '.join(f'{c.ranks} ranks {c.launcher}' for c in cases)}, "
            f"{ctx.warmup} warm-up, {ctx.runs} run(s)")
    failures = measure_all(ctx, cases, work, rank_py, secret)
    met, verdict = judge(cases, sizes)
    result = report.Result(
        NAME, "a silent job: the verdict after the hang timeout, and the stacks",
        f"Each run starts a job of plain Python ranks (`{PYTHON} rank.py`, no torch: 512 ranks "
        f"of it would not fit here) that print a line every 0.2 s; once every rank is up and "
        f"{SETTLE:.0f} s more have passed, the bench creates a file (*the fault*, timed here): "
        f"at its next look rank N*5/8+1 sends itself SIGSTOP and every other rank blocks in "
        f"`waiting_for_peers()` (`threading.Event().wait()`), so no rank prints again. "
        f"**dlaunch**: `dlaunch --nproc-per-node N --hang-timeout {HANG_TIMEOUT}s --name JOB -- "
        f"...` for 8 ranks; for more, manual mode on this machine: node 0 `dlaunch --nnodes K "
        f"--node-rank 0 --master-addr 127.0.0.1 --rdzv-port P --secret-file F --nproc-per-node "
        f"M --name JOB --hang-timeout {HANG_TIMEOUT}s -- ...`, nodes 1..K-1 the same without "
        f"--name and --hang-timeout. *verdict*: when node 0's stderr carried the `  suspect:` "
        f"line, *detected*: its `no rank made progress` line, *ended*: its exit; each in s "
        f"after the fault minus the hang timeout ({HANG_TIMEOUT} s), i.e. how long after the "
        f"stall time it came. *Python frames*: rank files in "
        f"`$DLAUNCH_STATE_DIR/JOB/stacks/<UTC>/` whose header says `stack by faulthandler`, "
        f"fewest over the runs, out of the ranks that are not stopped. **torchrun**: "
        f"`{TORCHRUN} --standalone --nproc_per_node N --redirects 9:2 --tee 9:2 --no_python "
        f"...` on the same hang, watched for {WATCH} s after the fault (the hang timeout + 10 "
        f"s), then killed with everything it started.", GOAL, met=met, verdict=verdict,
        tables=[report.Table(["ranks", "layout", "runs", "verdict: median s", "min s", "max s",
                              "detected: median s", "ended: median s",
                              "ranks with Python frames", "rank files", "suspect named",
                              "exit", "processes left"], dlaunch_rows(cases),
                             f"dlaunch, s after the hang timeout ({HANG_TIMEOUT} s):"),
                report.Table(["ranks", "runs", "printed nothing", "what it printed",
                              "still running", "ended after"], torchrun_rows(cases),
                             f"torchrun, {WATCH} s after the fault:")])
    if ctx.quick:
        result.notes.append(f"--quick: {', '.join(map(str, sizes))} ranks only.")
    result.notes.append(
        "The fault's time is taken just before the file is created; a rank looks for it "
        "before each line, so the job's last line comes at most a few ms after it. The stopped "
        "rank has no Python frames (taking a dump would mean continuing it): its file shows its "
        "state T from /proc.")
    result.notes.append(
        f"All nodes and ranks share this machine's {os.cpu_count()} cores: at 512 ranks that "
        f"is 512 Python processes printing 2,560 lines a second until the fault.")
    if not os.path.exists(TORCHRUN):
        result.notes.append(f"No {TORCHRUN}: torchrun not measured.")
    else:
        result.notes.append(
            "torchrun's `--redirects 9:2 --tee 9:2`: torch 1.13 on Python 3.11 cannot parse its "
            "own default (`0`), nor any mapping to 0, and a mapping names a local rank with one "
            "digit; local rank 9's stderr, which these ranks never write, is the one stream it "
            "touches.")
        result.notes.append(
            "torchrun's elastic agent watches its workers' exits (every `--monitor_interval`, "
            "default 5 s): a stopped or blocked worker has not exited. These ranks use no "
            "torch, so no collective's timeout ends them either.")
    result.notes += [f"{k[0]} ranks, {k[1]}: failed, left out: `{v[:400]}`"
                     for k, v in failures.items()]
    plots(ctx, result, cases)
    return result
