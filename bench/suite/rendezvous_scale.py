"""rendezvous-scale: node 0 is the real `dlaunch --nnodes N --node-rank 0`, the
other N-1 nodes simulated agents (bench/rendezvous/scale.py, which this wraps:
its load generator, its measurements; one run at a time)."""

import os
import statistics

import plot
import report
import wrapped

NAME = "rendezvous-scale"
GOAL = "every run assembles and exits 0 (no time goal at these sizes in this slice)"


def run(ctx):
    sizes = [100] if ctx.quick else [100, 1000]
    out = os.path.join(ctx.tmp, "scale.md")
    wrapped.run([os.path.join("bench", "rendezvous", "scale.py"),
                 "--build", f"dlaunch={ctx.bin_dir}", "--nodes", ",".join(map(str, sizes)),
                 "--repeat", str(ctx.runs), "--write", out], dict(os.environ), 1800, ctx.log)
    with open(out) as f:
        rows = wrapped.table(f.read())
    table, series, failed = [], {"s to exit": [], "s to last Assign": []}, []
    for n in sizes:
        mine = [r for r in rows if wrapped.number(r["nodes"]) == n]
        failed += [f"{n}: {r['result']}" for r in mine if r["result"] != "exit 0"]
        exits = [wrapped.number(r["s to exit"]) for r in mine]
        assigns = [wrapped.number(r["s to last Assign"]) for r in mine if r["s to last Assign"] != "-"]
        cpu = [wrapped.number(r["node 0 CPU s"]) for r in mine]
        rss = [wrapped.number(r["node 0 peak RSS MiB"]) for r in mine]
        table.append([f"{n:,}", f"{statistics.median(exits):.2f}", f"{min(exits):.2f}",
                      f"{max(exits):.2f}", str(len(exits)),
                      f"{statistics.median(assigns):.2f}" if assigns else "-",
                      f"{statistics.median(cpu):.2f}", f"{max(rss):.0f}"])
        series["s to exit"].append((n, statistics.median(exits), min(exits), max(exits)))
        if assigns:
            series["s to last Assign"].append((n, statistics.median(assigns), min(assigns),
                                               max(assigns)))
    result = report.Result(
        NAME, "rendezvous of N nodes at node 0",
        "`bench/rendezvous/scale.py --build dlaunch=BIN --nodes ... --repeat RUNS`: node 0 is the "
        "real `dlaunch --nnodes N --node-rank 0`, nodes 1..N-1 simulated agents (real handshake "
        "and HMAC) in load processes on the same cores, all on loopback. No peer: the script "
        "measures dlaunch alone.", GOAL,
        met=not failed, verdict="all exited 0" if not failed else f"failed: {failed}",
        tables=[report.Table(["nodes", "median s to exit", "min s", "max s", "runs",
                              "median s to last Assign", "node 0 CPU s (median)",
                              "node 0 peak RSS MiB (max)"], table)])
    png = os.path.join(ctx.plots_dir, "rendezvous-scale.png")
    plot.lines(png, "rendezvous at node 0 (median, min-max)", "nodes", "s", series, logx=True)
    result.plots.append(("rendezvous-scale: seconds against nodes", png))
    return result
