#!/usr/bin/env python3
"""What the MASTER_ADDR probe step adds to a job's start over SSH.

A job over more than one machine holds every rank until each agent has tried
node 0's candidate addresses (see README, "MASTER_ADDR across networks and
regions"). This runs `dlaunch --hosts F -- /bin/true` with two builds, one
with the probe step (--new-bin) and one without it (--old-bin, e.g. 46a32ff),
over the namespaces of tests/integration/netns_topology.py: hosts reached by
the coordinator over management links with real sshd servers.

Topologies (each built, measured and torn down in turn):
  cross-region  h0 in region A, h1 and h2 in region B (behind the VXLAN tunnel)
  same-region   h0, h1, h2 all in region A

Per topology: one warm-up run per build (fills the remote agent cache for
both, since each build uploads its own agent), then --runs runs per build,
interleaved new, old, new, old, ...; each run's wall clock from start to
exit. Every run is given -v, so the new build's probe table tells whether a
node's probe waited for the 3 s connect timeout. Each topology is measured in
series: runs back to back, and runs after an idle pause (--pause): the
routers answer a connect to an address they have no route for with an ICMP
"network unreachable", which fails the probe at once, but they send at most
about one such error per second per destination host (net.ipv4.icmp_ratelimit)
and a suppressed one leaves the probe waiting for its timeout. Prints median,
min and max per build, how many new runs had a probe time out, the
difference of medians, and the routers' sent and suppressed ICMP errors.

usage (root): bench/network/probe_cost.py --old-bin /work/wt-old/build/bin \
                  [--new-bin build/bin] [--runs 10] [--topology cross-region same-region]
                  [--pause 0 5]
"""

import argparse
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "integration"))
import harness  # noqa: E402
import netns_topology  # noqa: E402

TOPOLOGIES = {
    "cross-region": [("h0", "A"), ("h1", "B"), ("h2", "B")],
    "same-region": [("h0", "A"), ("h1", "A"), ("h2", "A")],
}

_seq = 0


def job_name(tag):
    global _seq
    _seq += 1
    return f"probecost-{os.getpid()}-{tag}-{_seq}"


def run_once(bin_dir, hosts_file, env, tag, timeout=120):
    """One job, with -v so that the new build logs its probe table; returns
    (seconds, CompletedProcess). Fails loudly on a non-zero exit."""
    job = job_name(tag)
    cmd = [os.path.join(bin_dir, "dlaunch"), "--hosts", hosts_file, "--name", job, "-v",
           "--", "/bin/true"]
    start = time.perf_counter()
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    elapsed = time.perf_counter() - start
    harness.kill_marker(job)  # nothing should be left; make sure of it
    if r.returncode != 0:
        raise SystemExit(f"{tag}: {' '.join(cmd)} exited {r.returncode}\n"
                         f"stdout:\n{r.stdout[-2000:]}\nstderr:\n{r.stderr[-2000:]}")
    return elapsed, r


def summarize(times):
    return statistics.median(times), min(times), max(times)


def probe_table(r):
    """The new build's -v lines about the MASTER_ADDR choice (empty for the old build)."""
    lines = r.stderr.splitlines()
    for i, line in enumerate(lines):
        if "MASTER_ADDR" in line and "every node reached" in line:
            out = [line]
            for more in lines[i + 1:]:
                if not more.startswith(" "):
                    break
                out.append(more)
            return out
    return []


def icmp_counters(topo):
    """Sent and rate-limited ICMP errors of both routers (absolute counters)."""
    sent = limited = 0
    for router in ("rA", "rB"):
        out = topo.run(router, ["nstat", "-asz", "IcmpOutDestUnreachs",
                                "IcmpOutRateLimitHost"]).stdout
        for line in out.splitlines():
            f = line.split()
            if len(f) >= 2 and f[0] == "IcmpOutDestUnreachs":
                sent += int(f[1])
            elif len(f) >= 2 and f[0] == "IcmpOutRateLimitHost":
                limited += int(f[1])
    return sent, limited


def series(topo, hosts_file, env, builds, runs, pause):
    """`runs` runs per build, interleaved, `pause` seconds of idle before each."""
    times = {tag: [] for tag in builds}
    waited = []  # per new run: did some node's probe wait for the timeout?
    icmp0 = icmp_counters(topo)
    last_table = []
    for i in range(runs):
        for tag, bin_dir in builds.items():
            time.sleep(pause)
            t, r = run_once(bin_dir, hosts_file, env, tag)
            times[tag].append(t)
            if tag == "new":
                table = probe_table(r)
                last_table = table or last_table
                waited.append(any("timed out" in line for line in table))
        print(f"  pause {pause:g} s, run {i + 1}: "
              + ", ".join(f"{tag} {times[tag][-1]:.3f} s" for tag in builds)
              + ("  (new: a probe timed out)" if waited[-1] else ""), flush=True)
    icmp1 = icmp_counters(topo)
    icmp = (icmp1[0] - icmp0[0], icmp1[1] - icmp0[1])
    return {"times": times, "waited": waited, "icmp": icmp, "table": last_table}


def measure(name, spec, builds, runs, pauses):
    print(f"== {name}: {', '.join(f'{h} ({r})' for h, r in spec)}", flush=True)
    with netns_topology.Topology(spec) as topo:
        hosts_file = topo.hosts_file()
        env = topo.env()
        env.pop("DLAUNCH_AGENT", None)  # each dlaunch must upload the agent beside it
        for tag, bin_dir in builds.items():
            t, _ = run_once(bin_dir, hosts_file, env, tag)
            print(f"  warm-up {tag}: {t:.3f} s", flush=True)
        return {pause: series(topo, hosts_file, env, builds, runs, pause) for pause in pauses}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--old-bin", required=True, help="build/bin of the version without the probe")
    ap.add_argument("--new-bin", default=os.path.join(HERE, "..", "..", "build", "bin"),
                    help="build/bin of the version with the probe (default: this checkout's)")
    ap.add_argument("--topology", nargs="+", choices=list(TOPOLOGIES), default=list(TOPOLOGIES))
    ap.add_argument("--pause", type=float, nargs="+", default=[0.0, 5.0],
                    help="idle seconds before each run, one series per value (default: 0 5); "
                         "the routers rate-limit their ICMP errors per destination host, so "
                         "back to back runs see more probes wait for the timeout")
    args = ap.parse_args()
    builds = {"new": os.path.abspath(args.new_bin), "old": os.path.abspath(args.old_bin)}
    for tag, d in builds.items():
        for exe in ("dlaunch", "dlaunch-agent"):
            if not os.access(os.path.join(d, exe), os.X_OK):
                raise SystemExit(f"--{tag}-bin {d}: no executable {exe}")
    netns_topology.require_topology()  # root, sshd, ip netns, nft; exits with SKIP otherwise

    results = {name: measure(name, TOPOLOGIES[name], builds, args.runs, args.pause)
               for name in args.topology}

    print(f"\n{args.runs} runs per build and series, interleaved new/old, after one warm-up "
          f"each; wall seconds of `dlaunch --hosts F -v -- /bin/true` over 3 hosts\n")
    print("| topology | pause | build | median | min | max | probe timed out |")
    print("| --- | ---: | --- | ---: | ---: | ---: | ---: |")
    for name, by_pause in results.items():
        for pause, s in by_pause.items():
            for tag in builds:
                med, lo, hi = summarize(s["times"][tag])
                label = "with probe (new)" if tag == "new" else "without probe (old)"
                waited = f"{sum(s['waited'])}/{len(s['waited'])}" if tag == "new" else ""
                print(f"| {name} | {pause:g} s | {label} | {med:.3f} | {lo:.3f} | {hi:.3f} "
                      f"| {waited} |")
    print()
    for name, by_pause in results.items():
        for pause, s in by_pause.items():
            new, old = s["times"]["new"], s["times"]["old"]
            diff = statistics.median(new) - statistics.median(old)
            fast = [t for t, w in zip(new, s["waited"]) if not w]
            line = (f"{name}, pause {pause:g} s: median new - median old = {diff * 1000:+.0f} ms")
            if fast and len(fast) < len(new):
                line += (f"; new runs whose probe did not time out ({len(fast)}): median "
                         f"{(statistics.median(fast) - statistics.median(old)) * 1000:+.0f} ms")
            line += (f"; routers' ICMP errors: {s['icmp'][0]} sent, {s['icmp'][1]} "
                     f"suppressed by the per-host rate limit")
            print(line)
    for name, by_pause in results.items():
        for pause, s in by_pause.items():
            print(f"\n{name}, pause {pause:g} s, the last new run's probe table (-v):")
            for line in s["table"]:
                print(f"  {line}")


if __name__ == "__main__":
    main()
