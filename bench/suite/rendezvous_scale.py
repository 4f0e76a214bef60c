"""rendezvous-scale: N agents join one rendezvous and learn that it is
complete. dlaunch: node 0 is the real `dlaunch --nnodes N --node-rank 0`, the
other N-1 nodes simulated agents (bench/rendezvous/scale.py, one run per call,
its figures read back as JSON). TCPStore: torch's store server and N clients,
each an `add` on a counter and a `wait` on the key the last one sets
(tcpstore_peer.py). Per size the two take turns (A B A B)."""

import json
import os
import resource
import statistics
import subprocess
import sys

import cleanup
import measure
import plot
import report

NAME = "rendezvous-scale"
SIZES = [100, 1000, 10000, 20000]
BIG = 10000            # from this size on: no warm-up round, at most BIG_RUNS runs
BIG_RUNS = 3
TIME_GOAL_S, TIME_GOAL_AGENTS = 2.0, 10000
RSS_GOAL_MIB = 1024
LINEAR_BASE = 1000     # per-agent time at the largest size over the one at this size
DLAUNCH, TCPSTORE = "dlaunch", "TCPStore"
# dlaunch against load agents that all connect at once, without the wait
# dlaunch-agent makes above 1,000 nodes: a storm no fleet of agents makes.
STORM = "dlaunch, no jitter (storm)"
PYTHON = "/usr/bin/python3"   # Debian's, with python3-torch
SCALE = os.path.join(cleanup.ROOT, "bench", "rendezvous", "scale.py")
PEER = os.path.join(cleanup.ROOT, "bench", "suite", "tcpstore_peer.py")
sys.path.insert(0, os.path.dirname(SCALE))
import scale  # noqa: E402  (bench/rendezvous: the agent's first-connect jitter)
LOAD_PROCS = max(1, min(8, os.cpu_count() or 1))   # scale.py's default --procs
STORE_TIMEOUT_S = 60   # TCPStore's timeout (connect, wait); scale.py's --timeout is 60 too
GOAL = (f"{TIME_GOAL_AGENTS:,} agents joined and assigned in under {TIME_GOAL_S:.0f} s on 2 cores; "
        f"time linear or better (per-agent time at the largest size at most that at "
        f"{LINEAR_BASE:,}); the coordinator under 1 GiB at {TIME_GOAL_AGENTS:,} agents")


def first_line(text, limit=240):
    line = next((l.strip() for l in text.splitlines() if l.strip()), "")
    return line if len(line) <= limit else line[:limit] + "..."


def dlaunch_error(row):
    """Why a scale.py run did not count: dlaunch's exit and its last error line."""
    lines = [l.strip() for l in row.get("stderr_tail", "").splitlines() if "error" in l]
    why = lines[-1].split("error:", 1)[-1].strip() if lines else ""
    return f"{row['result']}" + (f": {why}" if why else "")


def json_output(ctx, name):
    """Where a run writes its figures, and the `before` that clears the last run's."""
    out = os.path.join(ctx.tmp, name)

    def before():
        if os.path.exists(out):
            os.unlink(out)

    return out, before


def load_json(out, what, pick=lambda doc: doc):
    """The figures a run wrote; a run that wrote none failed."""
    try:
        with open(out) as f:
            return pick(json.load(f))
    except (OSError, ValueError, IndexError) as e:
        raise measure.RunFailed(f"{what} wrote no figures: {e!r}")


def dlaunch_peer(ctx, n, log, name=DLAUNCH, jitter="agent"):
    """dlaunch with the load's agents waiting `jitter` before their first
    connect: by default what dlaunch-agent waits at n nodes; "0" is the storm."""
    out, before = json_output(ctx, f"scale-{n}-{jitter}.json")

    def after(sample):
        row = load_json(out, "scale.py", lambda rows: rows[0])
        if row["result"] != "exit 0":
            raise measure.RunFailed(dlaunch_error(row))
        if row["assigned_s"] is None:
            raise measure.RunFailed("exit 0, but the load saw no Assign")
        sample.figures = {"s": row["assigned_s"], "exit_s": row["seconds"], "cpu_s": row["cpu_s"],
                          "rss_mib": row["hwm_mib"], "load_cpu_s": row["load_cpu_s"],
                          "fd_limit": row["fd_limit"]}
        log(f"    {name} {n:,}: last Assign {row['assigned_s']:.2f} s, exit "
            f"{row['seconds']:.2f} s, node 0 CPU {row['cpu_s']:.2f} s, peak RSS "
            f"{row['hwm_mib']:.0f} MiB, reconnects {row['reconnects']:,}")

    return measure.Peer(name, [PYTHON, SCALE, "--build", f"dlaunch={ctx.bin_dir}", "--nodes",
                               str(n), "--repeat", "1", "--timeout", str(STORE_TIMEOUT_S),
                               "--jitter", jitter, "--json", out], dict(os.environ),
                        before=before, after=after)


def tcpstore_peer(ctx, n, log):
    out, before = json_output(ctx, f"tcpstore-{n}.json")

    def after(sample):
        r = load_json(out, "tcpstore_peer.py")
        if r["error"]:
            raise measure.RunFailed(r["error"])
        if "server_cpu_s" not in r:
            raise measure.RunFailed("the barrier held, but the server gave no figures after it")
        growth = (r["server_hwm_kib"] - r["server_rss_before_kib"]) / 1024
        sample.figures = {"s": r["seconds"], "cpu_s": r["server_cpu_s"],
                          "rss_mib": r["server_hwm_kib"] / 1024, "rss_growth_mib": growth,
                          "load_cpu_s": r["clients_cpu_s"], "processes": r["processes"],
                          "fd_limit": r["nofile_hard"]}
        log(f"    {TCPSTORE} {n:,}: every wait returned at {r['seconds']:.2f} s, server CPU "
            f"{r['server_cpu_s']:.2f} s, peak RSS {r['server_hwm_kib'] / 1024:.0f} MiB "
            f"(+{growth:.0f} over its start), {r['processes']} client processes")

    return measure.Peer(TCPSTORE, [PYTHON, PEER, "--clients", str(n), "--out", out,
                                   "--timeout", str(STORE_TIMEOUT_S)], dict(os.environ),
                        before=before, after=after)


def torch_missing():
    """None when Debian's Python has torch.distributed's TCPStore, else why not."""
    try:
        r = subprocess.run([PYTHON, "-c", "import torch.distributed as d; d.TCPStore"],
                           capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as e:
        return repr(e)
    return None if r.returncode == 0 else first_line(r.stderr.strip().splitlines()[-1]
                                                       if r.stderr.strip() else "no torch")


def fig(stats, key):
    return [s.figures[key] for s in stats.samples]


def median(stats, key="s"):
    """The median of a figure the runs read back (Stats.median is the wrapper's wall time)."""
    return statistics.median(fig(stats, key))


def spread(values, digits=2):
    return (f"{statistics.median(values):.{digits}f}", f"{min(values):.{digits}f}",
            f"{max(values):.{digits}f}")


def judge(by_size, failures, sizes, cores):
    """(met, verdict) over the three goals; met None when a size they need was not run."""
    d = {n: by_size[n].get(DLAUNCH) for n in sizes}
    missed, unjudged, said = [], [], []
    at = d.get(TIME_GOAL_AGENTS)
    where = "" if cores == 2 else f" (this machine has {cores} cores)"
    if at:
        t, rss = median(at), max(fig(at, "rss_mib"))
        said.append(f"{TIME_GOAL_AGENTS:,} agents assigned in {t:.2f} s (median){where}")
        if t >= TIME_GOAL_S:
            missed.append(f"under {TIME_GOAL_S:.0f} s at {TIME_GOAL_AGENTS:,} ({t:.2f} s)")
        said.append(f"coordinator peak RSS {rss:.0f} MiB")
        if rss >= RSS_GOAL_MIB:
            missed.append(f"under 1 GiB at {TIME_GOAL_AGENTS:,} ({rss:.0f} MiB)")
    elif TIME_GOAL_AGENTS in sizes:
        why = failures.get(TIME_GOAL_AGENTS, {}).get(DLAUNCH, "no run")
        missed += [f"{TIME_GOAL_AGENTS:,} agents in under {TIME_GOAL_S:.0f} s (failed: "
                   f"{first_line(why, 120)})", f"under 1 GiB at {TIME_GOAL_AGENTS:,} (no run)"]
    else:
        unjudged.append(f"{TIME_GOAL_AGENTS:,} agents not run")
    done = [n for n in sizes if d[n] and n > LINEAR_BASE]
    if d.get(LINEAR_BASE) and done:
        top = max(done)
        ratio = (median(d[top]) / top) / (median(d[LINEAR_BASE]) / LINEAR_BASE)
        said.append(f"per-agent time at {top:,} over that at {LINEAR_BASE:,}: {ratio:.2f} "
                    f"(goal at most 1)")
        if ratio > 1:
            missed.append(f"linear or better ({ratio:.2f} at {top:,})")
        if top != max(sizes):
            why = failures.get(max(sizes), {}).get(DLAUNCH, "no run")
            said.append(f"{max(sizes):,} agents failed ({first_line(why, 160)}), so linearity "
                        f"is judged at {top:,}")
    else:
        unjudged.append(f"linearity needs {LINEAR_BASE:,} and a larger size")
    if missed:
        met, head = False, "missed: " + "; ".join(missed) + (
            "; not judged: " + "; ".join(unjudged) if unjudged else "")
    elif unjudged:
        met, head = None, "; ".join(unjudged)
    else:
        met, head = True, "all three goals hold"
    return met, head + (". " + "; ".join(said) if said else "")


def run(ctx):
    sizes = [100] if ctx.quick else SIZES
    no_torch = torch_missing()
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    by_size, failures = {}, {}
    for n in sizes:
        big = n >= BIG
        runs = min(ctx.runs, BIG_RUNS) if big else ctx.runs
        warmup = 0 if big else ctx.warmup
        ps = [dlaunch_peer(ctx, n, ctx.log)]
        if scale.agent_jitter(n) > 0:  # and the storm no fleet of dlaunch-agents makes
            ps.append(dlaunch_peer(ctx, n, ctx.log, STORM, "0"))
        if not no_torch:
            ps.append(tcpstore_peer(ctx, n, ctx.log))
        ctx.log(f"{NAME}: {n:,} agents, {', '.join(p.name for p in ps)}, {warmup} warm-up, "
                f"{runs} run(s)")
        by_size[n], failures[n] = measure.interleave(ps, runs, warmup, timeout=600, log=ctx.log)

    rows, per_agent, series = [], [], {}
    for n in sizes:
        for name in [DLAUNCH, STORM] + ([] if no_torch else [TCPSTORE]):
            s, failed = by_size[n].get(name), failures[n].get(name)
            if name == STORM and not (s or failed):
                continue  # not run at this size
            if not s:
                rows.append([f"{n:,}", name, f"failed: {first_line(failed or 'no run', 300)}",
                             "0"] + ["-"] * 7)
                continue
            result = "ok" if not failed else \
                f"ok in {len(s.samples)}, then failed: {first_line(failed, 200)}"
            times = fig(s, "s")
            exits = f"{statistics.median(fig(s, 'exit_s')):.2f}" if name != TCPSTORE else "-"
            rss = max(fig(s, "rss_mib"))
            rows.append([f"{n:,}", name, result, str(len(times)), *spread(times), exits,
                         f"{statistics.median(fig(s, 'cpu_s')):.2f}", f"{rss:.0f}",
                         f"{statistics.median(fig(s, 'load_cpu_s')):.2f}"])
            growth = rss if name != TCPSTORE else max(fig(s, "rss_growth_mib"))
            per_agent.append([f"{n:,}", name, f"{statistics.median(times) / n * 1e6:.0f}",
                              f"{statistics.median(fig(s, 'cpu_s')) / n * 1e6:.0f}",
                              f"{growth * 1024 / n:.1f}"])
            label = (f"{name}: s to last Assign" if name != TCPSTORE
                     else f"{TCPSTORE}: s to every wait returned")
            series.setdefault(label, []).append((n, statistics.median(times), min(times),
                                                 max(times)))
            if name == DLAUNCH:
                e = fig(s, "exit_s")
                series.setdefault(f"{DLAUNCH}: s to exit", []).append(
                    (n, statistics.median(e), min(e), max(e)))

    load = ("the C++ load generator `dlaunch-rdzv-load`"
            if os.access(os.path.join(ctx.bin_dir, "dlaunch-rdzv-load"), os.X_OK)
            else "the Python load generator `tests/integration/rdzv_load.py`")
    base = next((s.figures["rss_mib"] - s.figures["rss_growth_mib"] for n in sizes
                 for s in getattr(by_size[n].get(TCPSTORE), "samples", [])), None)
    met, verdict = judge(by_size, failures, sizes, os.cpu_count())
    if ctx.quick:
        met, verdict = None, f"--quick runs {', '.join(f'{n:,}' for n in sizes)} agents only"
    result = report.Result(
        NAME, "N agents join one rendezvous and learn they are complete",
        f"**{DLAUNCH}**: `bench/rendezvous/scale.py --build dlaunch=BIN --nodes N --repeat 1 "
        f"--timeout {STORE_TIMEOUT_S}` once per run: node 0 is the real `dlaunch --nnodes N "
        "--node-rank 0 --master-addr 127.0.0.1 -- true`, nodes 1..N-1 simulated agents (real "
        f"handshake and HMAC) in {load} ({LOAD_PROCS} processes), all on loopback; the time "
        "is from dlaunch's start to the last load agent's Assign (*s to exit*: to dlaunch's "
        "exit, after every rank's exit and AgentDone). Each load agent first waits what "
        "dlaunch-agent waits before its first connect (`--jitter agent`: uniform in [0, N/20 "
        "ms] above 1,000 nodes, so [0, 0.5 s] at 10,000; `RendezvousClient::jitter_for`), and "
        f"that wait is inside the time. **{STORM}**: the same with `--jitter 0`, every load "
        "agent connecting at once, beyond the kernel's accept queue (somaxconn 4,096): a storm "
        "no fleet of dlaunch-agents makes, shown for what it costs; the goal is judged on "
        f"**{DLAUNCH}**. "
        f"**{TCPSTORE}**: `bench/suite/tcpstore_peer.py --clients N` with Debian's "
        "python3-torch: one server process (`TCPStore(\"127.0.0.1\", 0, N+1, True, timeout, "
        "wait_for_workers=False)`) and N client TCPStore objects in client processes of at "
        "most 2,500 clients and 32 threads each; every client does `add(\"joined\", 1)`, the "
        "one that makes it N does `set(\"complete\")`, every client then `wait([\"complete\"])`"
        "; the time is from the moment every client process (torch already imported) is told "
        "to go to the last wait returning; its clients have no jitter of their own. The peers "
        "take turns at each size (A B C A B C). *CPU s*: "
        "node 0 (coordinator, its local agent and rank; wait4) or the store server process "
        "(every thread, from the store's start to the barrier's end). *peak RSS*: the "
        "coordinator's VmHWM or the server process's. *load CPU s*: the load generator's or "
        "the client processes' (from the go).",
        GOAL, met=met, verdict=verdict,
        tables=[report.Table(["agents", "peer", "result", "runs", "median s", "min s", "max s",
                              "median s to exit", "CPU s (median)", "peak RSS MiB (max)",
                              "load CPU s (median)"], rows,
                             "Time to all joined and assigned (dlaunch: last Assign; "
                             "TCPStore: every wait returned):"),
                report.Table(["agents", "peer", "µs per agent", "CPU µs per agent",
                              "RSS KiB per agent"], per_agent,
                             "Per agent: median time and CPU over agents; RSS: the "
                             "coordinator's peak over agents (dlaunch), the server's growth "
                             "over its RSS before the first client, over agents (TCPStore):")])
    result.notes.append(
        f"Descriptors: the hard limit here is {hard:,} (RLIMIT_NOFILE) and every process "
        "raises its soft limit to it. dlaunch's node 0 needs "
        "one per agent plus about 130 and refuses a job that cannot fit before it starts; the "
        "TCPStore server needs two per client (the store connection and the watch-key callback "
        "connection every torch 1.13 TCPStore opens) and aborts (`accept`: errno 24, an "
        "uncaught exception in its one poll thread) when they run out; each client also "
        "holds a pipe and a thread of its own.")
    result.notes.append(
        f"At {BIG:,} agents and more: no warm-up round and at most {BIG_RUNS} runs per peer "
        "(a TCPStore run there can take minutes before it ends or fails; the smaller sizes "
        "before warm the caches).")
    result.notes.append(
        "TCPStore's time leaves out Python's and torch's start-up (the server and client "
        "processes are up before the clock starts); dlaunch's includes node 0's and the load "
        "generator's process start. Its server's RSS includes Python and torch"
        + (f" ({base:.0f} MiB before the first client)" if base else "")
        + f". Clients and load share the machine's {os.cpu_count()} cores with the server or "
        "node 0.")
    if no_torch:
        result.notes.append(f"TCPStore not measured: {PYTHON} cannot import torch.distributed "
                            f"({no_torch}).")
    for n in sizes:
        result.notes += [f"{n:,} agents, {k} failed: `{first_line(v, 400)}`"
                         for k, v in failures[n].items()]
    series = {k: v for k, v in series.items() if v}
    if series:
        png = os.path.join(ctx.plots_dir, "rendezvous-scale.png")
        plot.lines(png, "rendezvous: all agents joined and assigned (median, min-max)",
                   "agents (log scale)", "s", series, logx=True)
        result.plots.append(("rendezvous-scale: seconds against agents", png))
    return result
