#!/usr/bin/python3
"""dlaunch's benchmark suite: each scenario runs dlaunch and its peers
interleaved and writes one section of RESULTS.md (medians, min, max, ratios,
the goal and whether it is met) with gnuplot plots next to it.

    scripts/bench.sh                       # every scenario, 5 runs each, bench/results/
    scripts/bench.sh --only one-node --runs 10   # one-node's section anew, the rest kept
    scripts/bench.sh --quick               # smoke check: one run, small sizes, to a temp dir

Not part of the test command: timings stay out of tests."""

import argparse
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cleanup  # noqa: E402  (first: it puts tests/integration on sys.path)
import faults  # noqa: E402
import hangs  # noqa: E402
import log_throughput  # noqa: E402
import machine  # noqa: E402
import mnist  # noqa: E402
import one_node  # noqa: E402
import rendezvous_scale  # noqa: E402
import report  # noqa: E402
import ssh_hosts  # noqa: E402
import stacks_pause  # noqa: E402
import ui  # noqa: E402

SCENARIOS = {m.NAME: m for m in (one_node, ssh_hosts, rendezvous_scale, log_throughput, mnist,
                                 faults, hangs, stacks_pause, ui)}


@dataclass
class Context:
    bin_dir: str      # a snapshot of the binaries being measured
    runs: int
    warmup: int
    quick: bool
    tmp: str
    plots_dir: str

    def log(self, line):
        print(line, flush=True)


def snapshot_binaries(src, dst):
    """Copies the binaries into the run's own directory: a build next door
    (the test suite rebuilds build/) must not swap them half-way through."""
    os.makedirs(dst)
    names = [n for n in os.listdir(src) if n.startswith("dlaunch")
             and not n.endswith("_tests") and os.path.isfile(os.path.join(src, n))]
    for n in names:
        shutil.copy2(os.path.join(src, n), dst)
    return dst


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5, help="measured runs per peer (default 5)")
    ap.add_argument("--quick", action="store_true",
                    help="each scenario once at small sizes, no warm-up (a smoke check); "
                    "writes to a temp dir unless --out is given")
    ap.add_argument("--only", action="append", choices=sorted(SCENARIOS),
                    help="run only this scenario (repeatable): its sections of the RESULTS.md "
                    "are rewritten, the other scenarios' kept as they are")
    ap.add_argument("--out", help="the RESULTS.md to write (plots go to plots/ beside it); "
                    "default bench/results/RESULTS.md, with --quick a temp dir")
    ap.add_argument("--bin", default=os.path.join(cleanup.ROOT, "build", "bin"),
                    help="directory with dlaunch and dlaunch-agent (default build/bin)")
    args = ap.parse_args()
    bin_dir = os.path.abspath(args.bin)
    if not os.access(os.path.join(bin_dir, "dlaunch"), os.X_OK):
        sys.exit(f"run.py: {bin_dir}/dlaunch is not built (scripts/bench.sh builds it)")
    if args.quick:
        runs, warmup = 1, 0
        out = args.out or os.path.join(tempfile.gettempdir(), "dlaunch-bench-quick", "RESULTS.md")
    else:
        runs, warmup = max(1, args.runs), 1
        out = args.out or os.path.join(cleanup.ROOT, "bench", "results", "RESULTS.md")
    out = os.path.abspath(out)
    names = args.only or list(SCENARIOS)

    cleanup.install_signal_handlers()
    tmp = tempfile.mkdtemp(prefix="dlaunch-bench-")
    results, code = [], 0
    try:
        ctx = Context(snapshot_binaries(bin_dir, os.path.join(tmp, "bin")), runs, warmup,
                      args.quick, tmp, os.path.join(os.path.dirname(out), "plots"))
        facts, versions = machine.facts(), machine.versions(bin_dir)
        for name in names:
            start = time.monotonic()
            try:
                results.append(SCENARIOS[name].run(ctx))
            except Exception as e:  # one broken scenario must not cost the others' results
                code = 1
                ctx.log(f"{name}: error: {e!r}")
                results.append(report.Result(name, "error", "", SCENARIOS[name].GOAL,
                                             verdict=f"the scenario failed: `{e!r}`"))
            ctx.log(f"{name}: done in {time.monotonic() - start:.0f} s")
        command = "scripts/bench.sh " + " ".join(sys.argv[1:])
        report.write(out, results, facts, versions, command.strip(), runs, warmup,
                     order=list(SCENARIOS))
        print(f"wrote {out}")
    except cleanup.Interrupted as e:
        print(f"run.py: interrupted ({e}); stopping everything it started", file=sys.stderr)
        code = 130
    finally:
        left = cleanup.sweep()
        if left:
            print(f"run.py: killed {len(left)} leftover process(es): {left}", file=sys.stderr)
        shutil.rmtree(tmp, ignore_errors=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
