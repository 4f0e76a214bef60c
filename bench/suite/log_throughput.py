"""log-throughput: 8 ranks each write N lines through dlaunch into a file,
against the same 8 writers started by a plain shell (bench/output/throughput.py,
which this wraps, alternating the two itself)."""

import os

import plot
import report
import wrapped

NAME = "log-throughput"
GOAL = "none set in this slice: reported against a plain shell writing the same lines"


def run(ctx):
    lines = 100_000 if ctx.quick else 1_000_000
    text = wrapped.run([os.path.join("bench", "output", "throughput.py"),
                        "--build", f"now={ctx.bin_dir}", "--ranks", "8", "--lines", str(lines),
                        "--repeat", str(ctx.runs)], dict(os.environ), 1800, ctx.log)
    rows = wrapped.table(text)
    peer = next(r for r in rows if r["run"].startswith("peer"))
    mine = next(r for r in rows if r["run"].startswith("dlaunch"))
    table = [[r["run"], r["median s"], r["min s"], "-", r["output MB"], r["MB/s"],
              r["x peer time"]] for r in (mine, peer)]
    result = report.Result(
        NAME, f"8 ranks x {lines:,} lines of output into a file",
        f"`bench/output/throughput.py --ranks 8 --lines {lines} --repeat RUNS`: `seq 1 N` in 8 "
        "ranks of `dlaunch -n 8`, its stdout to a file, against the same 8 `seq` started by "
        "`sh` into the same kind of file (no prefixes, no launcher). The script alternates the "
        "order itself, with no warm-up, and prints no maximum.", GOAL, verdict=f"dlaunch takes {mine['x peer time']}x the shell's time",
        tables=[report.Table(["run", "median s", "min s", "max s", "output MB", "MB/s",
                              "÷ shell median"], table)])
    png = os.path.join(ctx.plots_dir, "log-throughput.png")
    plot.bars(png, f"8 ranks x {lines:,} lines into a file: MB/s (median)", "MB/s",
              [(r["run"], wrapped.number(r["MB/s"]), wrapped.number(r["MB/s"]),
                wrapped.number(r["MB/s"])) for r in (mine, peer)])
    result.plots.append(("log-throughput: MB/s", png))
    return result
