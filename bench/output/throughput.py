#!/usr/bin/env python3
"""Throughput of rank output through dlaunch: 8 ranks each write N short lines
(`seq 1 N`), dlaunch's stdout goes to a file. Measured side by side, in
alternating order, against the same 8 writers started by a plain shell into
the same kind of file (the peer), and optionally against other dlaunch builds.

    bench/output/throughput.py --build now=build/bin --build before=/path/bin \\
        --lines 1000000 --repeat 5

Prints, for each, the median wall seconds, MB/s of terminal output and the
ratio to the peer; with two builds, their ratio too. Timings stay here, never
in tests."""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time


def run_once(cmd, out_path, env):
    with open(out_path, "wb") as out:
        start = time.perf_counter()
        r = subprocess.run(cmd, stdout=out, stderr=subprocess.PIPE, env=env)
        elapsed = time.perf_counter() - start
    if r.returncode != 0:
        raise SystemExit(f"{cmd[0]} failed ({r.returncode}): {r.stderr.decode()[-400:]}")
    return elapsed, os.path.getsize(out_path)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--build", action="append", default=[],
                    help="name=bin_dir of a dlaunch build (repeatable); default now=build/bin")
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--lines", type=int, default=1_000_000, help="lines per rank")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    builds = [b.split("=", 1) for b in (args.build or ["now=build/bin"])]

    tmp = tempfile.mkdtemp(prefix="dlaunch-throughput-")
    env = dict(os.environ, DLAUNCH_STATE_DIR=os.path.join(tmp, "state"))
    out_path = os.path.join(tmp, "out")
    peer = ["sh", "-c", f'for i in $(seq 1 {args.ranks}); do seq 1 {args.lines} & done; wait']
    runs = {"peer (sh, no launcher)": peer}
    for name, bin_dir in builds:
        runs[f"dlaunch {name}"] = [os.path.join(bin_dir, "dlaunch"), "-n", str(args.ranks), "--",
                                   "seq", "1", str(args.lines)]
    times = {name: [] for name in runs}
    sizes = {}
    for rep in range(args.repeat):
        order = list(runs) if rep % 2 == 0 else list(reversed(runs))
        for name in order:
            t, size = run_once(runs[name], out_path, env)
            times[name].append(t)
            sizes[name] = size

    print(f"machine: {os.cpu_count()} cores; {args.ranks} ranks x {args.lines} lines; "
          f"median of {args.repeat}, alternating order")
    print("| run | median s | min s | output MB | MB/s | x peer time |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    peer_median = statistics.median(times["peer (sh, no launcher)"])
    medians = {}
    for name in runs:
        med = statistics.median(times[name])
        medians[name] = med
        mb = sizes[name] / 1e6
        print(f"| {name} | {med:.2f} | {min(times[name]):.2f} | {mb:.1f} | {mb / med:.0f} | "
              f"{med / peer_median:.2f} |")
    names = [n for n in runs if n.startswith("dlaunch")]
    if len(names) == 2:
        a, b = names
        print(f"\n{a} / {b}: {medians[a] / medians[b]:.3f} (time ratio)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
