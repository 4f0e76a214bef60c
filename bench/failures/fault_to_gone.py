#!/usr/bin/env python3
"""Time from a fault to the last process of the job gone, per scenario, median
of N runs, against the heartbeat timeout. Local agents (one machine, 2 ranks,
each rank with a setsid grandchild that ignores SIGTERM, the ranks themselves
ignoring SIGTERM too: the slowest case to clean up).

usage: bench/failures/fault_to_gone.py [--runs 10] [--grace 2] [--heartbeat 5]
"""

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "integration"))
import harness  # noqa: E402


def start(job, args, state):
    env = dict(os.environ, DLAUNCH_STATE_DIR=state)
    p = subprocess.Popen([harness.DLAUNCH, "-n", "2", "--name", job, *args, "--", sys.executable,
                          "-c", harness.STUBBORN_RANK], env=env, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    if not harness.wait_for(lambda: len(harness.processes_with_marker(job)) >= 4, 30):
        raise SystemExit("ranks did not start")
    return p


def agent_worker(pid):
    guardian = [c for c in harness.children_of(pid) if harness.exe_name(c) == "dlaunch-agent"][0]
    return [c for c in harness.children_of(guardian) if harness.exe_name(c) == "dlaunch-agent"][0]


def rank_pid(job):
    return [p for p in harness.processes_with_marker(job)
            if harness.exe_name(p).startswith("python")][0]


SCENARIOS = {
    "kill -9 of one rank": lambda p, job: os.kill(rank_pid(job), signal.SIGKILL),
    "kill -9 of the agent": lambda p, job: os.kill(agent_worker(p.pid), signal.SIGKILL),
    "kill -9 of the coordinator": lambda p, job: os.kill(p.pid, signal.SIGKILL),
    "agent frozen (SIGSTOP)": lambda p, job: os.kill(agent_worker(p.pid), signal.SIGSTOP),
    "coordinator frozen (SIGSTOP)": lambda p, job: os.kill(p.pid, signal.SIGSTOP),
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--grace", type=int, default=2)
    ap.add_argument("--heartbeat", type=int, default=5)
    args = ap.parse_args()
    state = tempfile.mkdtemp(prefix="dlaunch-bench-")
    flags = ["--grace", str(args.grace), "--heartbeat-timeout", str(args.heartbeat)]
    print(f"--grace {args.grace} --heartbeat-timeout {args.heartbeat}; "
          f"2 ranks + 2 setsid grandchildren, all ignoring SIGTERM; median of {args.runs}")
    for name, fault in SCENARIOS.items():
        times = []
        for i in range(args.runs):
            job = f"bench-{os.getpid()}-{len(times)}-{abs(hash(name)) % 10000}-{i}"
            p = start(job, flags, state)
            times.append(harness.time_fault_to_gone(p, job, fault))
        print(f"  {name:32s} median {statistics.median(times):6.2f} s "
              f"(min {min(times):.2f}, max {max(times):.2f})")


if __name__ == "__main__":
    main()
