"""ui: `dlaunch ui` over a state dir of 1,000 job records: how long each of
its requests takes (a fresh connection each, urllib) next to `dlaunch list
--all --json` reading the same records, the server's memory after them, and
its CPU while no one looks (issue 54)."""

import json
import math
import os
import re
import shutil
import signal
import statistics
import subprocess
import threading
import time
import tomllib
import urllib.error
import urllib.request
from dataclasses import dataclass, field

import cleanup
import harness  # found through cleanup's sys.path entry for tests/integration
import measure
import plot
import report

NAME = "ui"
GOAL_MS = 50.0           # ms: GET / and GET /api/jobs, median, at JOBS records
GOAL_MIB = 20.0          # MiB: the server's peak resident set (VmHWM) after every request
JOBS = 1000              # job records in the state dir
GOAL = (f"GET / and GET /api/jobs answer in under {GOAL_MS:.0f} ms (median) with {JOBS:,} job "
        f"records; the server stays under {GOAL_MIB:.0f} MiB (VmHWM) and uses no CPU (0 clock "
        f"ticks) while no one looks")
REQUESTS = 50            # measured rounds: each request once, then `dlaunch list` once
WARMUP = 5               # rounds before them, not recorded
IDLE = 10.0              # s the server is left alone after the last request
FAILED_EVERY = 4         # every 4th record is a copy of the failed job
SPACING = 600            # s between two records' start times, the newest an hour ago
JOB_LIMIT = 60.0         # s for a source job to end
START_LIMIT = 30.0       # s for the server to print its URL
STOP_LIMIT = 10.0        # s for the server to exit after SIGINT
POLL = 0.1

# The real jobs every record is copied from: (name, ranks, command, the status it ends in);
# their names carry the suite's pid, so that killing what they left can hit nothing else.
SOURCES = [(f"bench-ui-ok-{os.getpid()}", 2, ["sh", "-c", "echo hi"], "SUCCEEDED"),
           (f"bench-ui-fail-{os.getpid()}", 2, ["sh", "-c", "echo boom >&2; exit 3"], "FAILED")]


def record_name(i):
    return f"ui-{i:04d}"


@dataclass
class Series:
    label: str
    samples: list = field(default_factory=list)   # s
    size: int = 0                                 # bytes of the last answer

    @property
    def median(self):
        return statistics.median(self.samples)

    @property
    def p95(self):
        """Nearest rank: the smallest sample at or above 95% of them."""
        s = sorted(self.samples)
        return s[max(0, math.ceil(0.95 * len(s)) - 1)]


def dlaunch(ctx, env, *args, timeout=60):
    return subprocess.run([os.path.join(ctx.bin_dir, "dlaunch"), *args],
                          env=cleanup.marked_env(env), stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=timeout,
                          start_new_session=True)


def run_sources(ctx, src):
    """Runs each source job detached under `src` to its end; {status: its job dir}."""
    env = dict(os.environ, DLAUNCH_STATE_DIR=src)
    dirs = {}
    for name, ranks, command, want in SOURCES:
        r = dlaunch(ctx, env, "-d", "--name", name, "-n", str(ranks), "--", *command)
        if r.returncode != 0:
            raise RuntimeError(f"dlaunch -d --name {name} exited {r.returncode}: "
                               f"{r.stderr.strip()[-400:]}")
        deadline, status = time.monotonic() + JOB_LIMIT, None
        while time.monotonic() < deadline:
            g = dlaunch(ctx, env, "get", name, "--json")
            status = json.loads(g.stdout).get("status") if g.returncode == 0 else None
            if status in ("SUCCEEDED", "FAILED", "STOPPED", "LOST", "HUNG"):
                break
            time.sleep(POLL)
        if status != want:
            raise RuntimeError(f"source job {name} ended {status}, not {want}")
        if harness.wait_no_marker(name, 10):
            raise RuntimeError(f"source job {name}: processes left after it ended")
        dirs[want] = os.path.join(src, name)
    return dirs


def shift(text, key, delta):
    """Adds `delta` to every integer `key = N` line of a job.toml (and every
    `key = N` inside an inline table, for the history's times)."""
    return re.sub(rf"(?m)(^|[{{,]\s*){key} = (\d+)",
                  lambda m: f"{m[1]}{key} = {int(m[2]) + delta}", text)


def make_records(sources, state, n):
    """`n` copies of the source jobs' directories under `state`, each under a
    name of its own (its `name = ...` rewritten) and started SPACING s before
    the next, every FAILED_EVERY-th from the failed job; {status: count}."""
    os.makedirs(state, mode=0o700)
    now = int(time.time())
    texts = {}
    for status, d in sources.items():
        with open(os.path.join(d, "job.toml")) as f:
            texts[status] = f.read()
    counts = {}
    for i in range(n):
        status = "FAILED" if i % FAILED_EVERY == FAILED_EVERY - 1 else "SUCCEEDED"
        name = record_name(i)
        text = texts[status]
        old = tomllib.loads(text)
        started = now - 3600 - (n - 1 - i) * SPACING   # ui-0999 the newest
        delta = started - old["started"]
        text, subs = re.subn(r'(?m)^name = (["\']).*\1$', lambda m: f"name = {m[1]}{name}{m[1]}",
                             text, count=1)
        if subs != 1:
            raise RuntimeError("job.toml: no `name = ...` line to rewrite")
        text = shift(text, "started", delta)
        text = shift(text, "finished", delta + i % 7 * 60)   # durations of 0 to 6 minutes more
        text = shift(text, "time", delta)
        text = re.sub(r"(?m)^started_ms = \d+$",
                      f"started_ms = {started * 1000 + old['started_ms'] % 1000}", text)
        new = tomllib.loads(text)
        if new["name"] != name or new["started"] != started:
            raise RuntimeError(f"job.toml of {name}: the rewrite did not take")
        job = os.path.join(state, name)
        shutil.copytree(sources[status], job, symlinks=True)
        with open(os.path.join(job, "job.toml"), "w") as f:
            f.write(text)
        counts[status] = counts.get(status, 0) + 1
    return counts


def proc_status(pid):
    with open(f"/proc/{pid}/status") as f:
        return dict(line.rstrip("\n").split(":\t", 1) for line in f if ":\t" in line)


def kib(status, key):
    return int(status[key].split()[0])


def cpu_ticks(pid):
    """utime + stime of the process, all its threads (/proc/PID/stat fields 14 and 15)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])   # fields from the 3rd on


def switches(pid):
    """Context switches, voluntary and not, over the process's threads: its wakeups."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            s = proc_status(f"{pid}/task/{tid}")
        except OSError:
            continue
        total += int(s["voluntary_ctxt_switches"]) + int(s["nonvoluntary_ctxt_switches"])
    return total


def memory(pid):
    s = proc_status(pid)
    return {"hwm": kib(s, "VmHWM"), "rss": kib(s, "VmRSS"), "threads": int(s["Threads"])}


class Server:
    """`dlaunch ui --listen 127.0.0.1:0 --log-dir STATE`, its URL read from its first line."""

    def __init__(self, ctx, state, work):
        self.err_path = os.path.join(work, "ui.err")
        self.err = open(self.err_path, "w")
        self.proc = subprocess.Popen(
            [os.path.join(ctx.bin_dir, "dlaunch"), "ui", "--listen", "127.0.0.1:0", "--log-dir",
             state], env=cleanup.marked_env(dict(os.environ)), stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=self.err, start_new_session=True)
        line = []
        reader = threading.Thread(target=lambda: line.append(self.proc.stdout.readline()),
                                  daemon=True)
        reader.start()
        reader.join(START_LIMIT)
        text = line[0].decode(errors="replace") if line else ""
        m = re.search(r"(http://\S+/),", text)
        if not m:
            raise RuntimeError(f"dlaunch ui printed no URL in {START_LIMIT:.0f} s: {text!r} "
                               f"(exit {self.proc.poll()}; stderr: {self.stderr()})")
        self.url = m[1].rstrip("/")
        self.pid = self.proc.pid

    def stderr(self):
        self.err.flush()
        with open(self.err_path, errors="replace") as f:
            return f.read().strip()[-400:]

    def interrupt(self):
        """SIGINT, as Ctrl-C; its exit code, or None if it is still running after STOP_LIMIT s."""
        os.kill(self.proc.pid, signal.SIGINT)
        try:
            return self.proc.wait(STOP_LIMIT)
        except subprocess.TimeoutExpired:
            return None

    def close(self):
        cleanup.stop(self.proc)
        self.proc.stdout.close()
        self.err.close()


# No proxy from the environment: the requests go straight to loopback.
OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def get(url):
    """(s from the request to the answer's last byte, the answer). urllib sends
    `Connection: close`: every request opens a connection of its own."""
    start = time.perf_counter()
    try:
        with OPENER.open(url, timeout=30) as r:
            body = r.read()
    except urllib.error.HTTPError as e:
        raise RuntimeError(f"GET {url}: {e.code} {e.reason}") from None
    return time.perf_counter() - start, body


def check(server, list_peer, n, counts, one):
    """The answers hold what they should, before anything is timed."""
    jobs = json.loads(get(server.url + "/api/jobs")[1])["jobs"]
    got = {}
    for j in jobs:
        got[j["status"]] = got.get(j["status"], 0) + 1
    if len(jobs) != n or got != counts:
        raise RuntimeError(f"/api/jobs: {len(jobs)} jobs {got}, not {n} {counts}")
    job = json.loads(get(f"{server.url}/api/jobs/{one}")[1])["job"]
    if job.get("name") != one:
        raise RuntimeError(f"/api/jobs/{one}: the job is {job.get('name')!r}")
    if b"dlaunch_jobs" not in get(server.url + "/metrics")[1]:
        raise RuntimeError("/metrics: no dlaunch_jobs")
    r = subprocess.run(list_peer.argv, env=cleanup.marked_env(list_peer.env),
                       capture_output=True, text=True, timeout=60)
    listed = json.loads(r.stdout) if r.returncode == 0 else None
    listed = listed.get("jobs", listed) if isinstance(listed, dict) else listed
    if not isinstance(listed, list) or len(listed) != n:
        raise RuntimeError(f"dlaunch list --all --json: exit {r.returncode}, "
                           f"{len(listed) if isinstance(listed, list) else 'no'} jobs, not {n}: "
                           f"{r.stderr.strip()[-300:]}")


def measure_requests(ctx, server, paths, list_peer, rounds, warm):
    """Each round: every path once, then `dlaunch list` once; `warm` rounds unrecorded."""
    series = {p: Series(f"GET {p}") for p in paths}
    listed = measure.Stats()
    for round_ in range(warm + rounds):
        for p, s in series.items():
            wall, body = get(server.url + p)
            s.size = len(body)
            if round_ >= warm:
                s.samples.append(wall)
        sample = measure.run_once(list_peer, 60)
        if round_ >= warm:
            listed.samples.append(sample)
    for p, s in series.items():
        ctx.log(f"  GET {p}: median {report.ms(s.median)} ms, p95 {report.ms(s.p95)} ms "
                f"({s.size:,} bytes)")
    ctx.log(f"  dlaunch list --all --json: median {report.ms(listed.median)} ms")
    return series, listed


def judge(series, listed, paths, mem, idle, code, n, idle_s):
    page, api = series[paths[0]], series[paths[1]]
    slow = [s.label for s in (page, api) if s.median * 1000 >= GOAL_MS]
    said = (f"GET / median {report.ms(page.median)} ms (p95 {report.ms(page.p95)}), GET "
            f"/api/jobs median {report.ms(api.median)} ms (p95 {report.ms(api.p95)}) with "
            f"{n:,} records (goal < {GOAL_MS:.0f}); `dlaunch list --all --json` "
            f"{report.ms(listed.median)} ms, /api/jobs over it "
            f"{api.median / listed.median:.2f}x; VmHWM {mem['hwm'] / 1024:.1f} MiB, VmRSS "
            f"{mem['rss'] / 1024:.1f} MiB (goal < {GOAL_MIB:.0f}); "
            f"{idle['ticks']} clock ticks and {idle['switches']} context switches in "
            f"{idle_s:.0f} s idle (goal 0 ticks), {idle['threads']} threads; exit "
            f"{'none' if code is None else code} on SIGINT")
    missed = []
    if slow:
        missed.append(" and ".join(slow) + f" at {GOAL_MS:.0f} ms or more")
    if mem["hwm"] / 1024 >= GOAL_MIB:
        missed.append(f"VmHWM {mem['hwm'] / 1024:.1f} MiB")
    if idle["ticks"]:
        missed.append(f"{idle['ticks']} ticks of CPU while idle")
    if missed:
        return False, "missed: " + "; ".join(missed) + ". " + said
    return True, said


def run(ctx):
    n = 100 if ctx.quick else JOBS
    rounds, warm = (5, 0) if ctx.quick else (REQUESTS, WARMUP)
    idle_s = 2.0 if ctx.quick else IDLE
    work = os.path.join(ctx.tmp, "ui")
    src, state = os.path.join(work, "src"), os.path.join(work, "state")
    os.makedirs(work)
    one = record_name(n // 2)
    paths = ["/", "/api/jobs", f"/api/jobs/{one}", "/metrics"]
    ctx.log(f"{NAME}: {n:,} job records, {warm} warm-up and {rounds} measured rounds of "
            f"{', '.join(paths)} and `dlaunch list --all --json`, then {idle_s:.0f} s idle")
    server = None
    try:
        counts = make_records(run_sources(ctx, src), state, n)
        ctx.log(f"  records: {counts}")
        list_peer = measure.Peer("dlaunch list", [os.path.join(ctx.bin_dir, "dlaunch"), "list",
                                                  "--all", "--json", "--log-dir", state],
                                 dict(os.environ))
        server = Server(ctx, state, work)
        start_mem = memory(server.pid)
        check(server, list_peer, n, counts, one)
        series, listed = measure_requests(ctx, server, paths, list_peer, rounds, warm)
        mem = memory(server.pid)
        ticks0, switches0 = cpu_ticks(server.pid), switches(server.pid)
        time.sleep(idle_s)
        ticks1, switches1 = cpu_ticks(server.pid), switches(server.pid)
        idle = {"ticks": ticks1 - ticks0, "switches": switches1 - switches0,
                "threads": memory(server.pid)["threads"], "before": ticks0, "after": ticks1}
        ctx.log(f"  server: VmHWM {mem['hwm']} KiB, VmRSS {mem['rss']} KiB; idle {idle_s:.0f} s: "
                f"ticks {ticks0} -> {ticks1}, {idle['switches']} switches, "
                f"{idle['threads']} threads")
        code = server.interrupt()
        ctx.log(f"  SIGINT: exit {code}")
        err = server.stderr()
    finally:
        if server:
            server.close()
        harness.kill_coordinators(src)
        for name, *_ in SOURCES:
            harness.kill_marker(name)
        shutil.rmtree(work, ignore_errors=True)

    met, verdict = judge(series, listed, paths, mem, idle, code, n, idle_s)
    if code != 0:
        verdict += f" (the server exited {'not at all' if code is None else code} on SIGINT)"
    tick = os.sysconf("SC_CLK_TCK")
    rows = []
    for p in paths:
        s = series[p]
        rows.append([f"`GET {p}`", report.ms(s.median), report.ms(s.p95), report.ms(min(s.samples)),
                     report.ms(max(s.samples)), str(len(s.samples)), f"{s.size:,}",
                     f"{s.median / listed.median:.2f}", "-", "-"])
    rows.append(["`dlaunch list --all --json`", report.ms(listed.median),
                 report.ms(Series("", listed.wall()).p95), report.ms(listed.min),
                 report.ms(listed.max), str(len(listed.samples)), "-", "1.00",
                 report.ms(listed.cpu_median), f"{listed.maxrss_mib:.1f}"])
    requests = report.Table(
        ["request", "median ms", "p95 ms", "min ms", "max ms", "runs", "bytes",
         "÷ list median", "CPU ms (median)", "peak RSS MiB"], rows,
        f"Wall time per request with {n:,} job records, and the CLI reading the same records:")
    server_table = report.Table(
        ["VmHWM MiB", "VmRSS MiB", "VmRSS at start MiB", "threads", f"CPU ticks in {idle_s:.0f} s "
         f"idle", "context switches in it", "exit on SIGINT"],
        [[f"{mem['hwm'] / 1024:.1f}", f"{mem['rss'] / 1024:.1f}",
          f"{start_mem['rss'] / 1024:.1f}", str(idle["threads"]),
          f"{idle['ticks']} ({idle['before']} -> {idle['after']})", str(idle["switches"]),
          "none" if code is None else str(code)]],
        f"The server after every request ({warm + rounds} rounds and the checks), then left "
        f"alone:")
    result = report.Result(
        NAME, f"`dlaunch ui` over {n:,} job records",
        f"Two real jobs run first, detached, in a state dir of their own (`dlaunch -d --name SRC "
        f"-n 2 -- sh -c 'echo hi'`, which ends SUCCEEDED, and `dlaunch -d --name SRC -n 2 -- "
        f"sh -c 'echo boom >&2; exit 3'`, FAILED, each waited for with `dlaunch get NAME "
        f"--json`); their directories (job.toml, rank logs, coordinator.log) are copied to "
        f"{n:,} names `ui-0000` to `ui-{n - 1:04d}` in a new state dir, each job.toml's "
        f"`name` rewritten and its start, end and history times moved ({SPACING // 60} "
        f"minutes apart, the newest an hour ago), every {FAILED_EVERY}th a copy of the failed "
        f"one ({counts.get('FAILED', 0)} FAILED, {counts.get('SUCCEEDED', 0)} SUCCEEDED). Then "
        f"`dlaunch ui --listen 127.0.0.1:0 --log-dir DIR` serves them, and each round requests "
        f"{', '.join(f'`{p}`' for p in paths)} once each with Python's urllib (a connection of "
        f"its own per request, `Connection: close`; wall time from the request to the "
        f"answer's last byte), then runs `dlaunch list --all --json --log-dir DIR` once (wall "
        f"time from spawn to reap): {warm} warm-up rounds, then {rounds} measured. `/api/jobs` "
        f"is what the jobs page fetches every 2 s, every record read; `/` is the page's HTML "
        f"that fetches it. *p95*: the nearest-rank 95th percentile. *÷ list median*: the "
        f"request's median over `dlaunch list`'s (below 1: the server answers faster than the "
        f"CLI reads the same records). After the last round: the server's VmHWM and VmRSS "
        f"(/proc/PID/status); then {idle_s:.0f} s with no request, its utime+stime "
        f"(/proc/PID/stat fields 14 and 15, {tick} ticks a second) read at the start and the "
        f"end, and its threads' context switches; then SIGINT, as Ctrl-C.",
        GOAL, met=met, verdict=verdict, tables=[requests, server_table])
    if ctx.quick:
        result.notes.append(f"--quick: {n} records, {rounds} rounds, no warm-up, "
                            f"{idle_s:.0f} s idle.")
    result.notes.append(f"`--runs` does not change this scenario: {rounds} measured rounds "
                        f"after {warm} warm-up rounds, one server. The client, the server and "
                        f"`dlaunch list` share this machine's {os.cpu_count()} cores, one at a "
                        f"time.")
    if err:
        result.notes.append(f"The server's stderr: `{err}`")
    png = os.path.join(ctx.plots_dir, "ui.png")
    bars = [(series[p].label, series[p].median * 1000, min(series[p].samples) * 1000,
             max(series[p].samples) * 1000) for p in paths]
    bars.append(("dlaunch list --all --json", listed.median * 1000, listed.min * 1000,
                 listed.max * 1000))
    plot.bars(png, f"dlaunch ui over {n:,} job records: wall time per request (median, min-max)",
              "ms (log scale)", bars, logy=True, fmt="%.1f", enhanced=False, slanted=True)
    result.plots.append(("ui: wall time per request and of dlaunch list", png))
    return result
