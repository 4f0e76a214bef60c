#!/usr/bin/env python3
"""Time from a fault to the last process of the job gone, over SSH hosts in
network namespaces (root needed for the link cut): 3 hosts x 1 rank, each rank
with a setsid grandchild, ranks and grandchildren ignoring SIGTERM. Median of N
runs per scenario, against --heartbeat-timeout.

usage: bench/failures/fault_to_gone_ssh.py [--runs 10] [--grace 2] [--heartbeat 5]
"""

import argparse
import os
import signal
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "integration"))
import harness  # noqa: E402
import sshd_harness  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--grace", type=int, default=2)
    ap.add_argument("--heartbeat", type=int, default=5)
    args = ap.parse_args()
    with sshd_harness.SshHosts(3) as hosts:
        hosts.write_known_hosts()
        hosts_file = hosts.hosts_file([1, 1, 1])
        env = hosts.env()
        veth = f"dv{hosts.tag}h2"
        scenarios = {
            "kill -9 of one rank": lambda p, job: os.kill(
                [q for q in harness.processes_with_marker(job)
                 if harness.exe_name(q).startswith("python")][0], signal.SIGKILL),
            "kill -9 of an agent": lambda p, job: os.kill(harness.agent_workers_of(job)[0], signal.SIGKILL),
            "kill -9 of the coordinator": lambda p, job: os.kill(p.pid, signal.SIGKILL),
        }
        if hosts.netns:
            scenarios["link of one host cut"] = lambda p, job: subprocess.run(
                ["ip", "link", "set", veth, "down"], check=True)
        print(f"3 SSH hosts ({'network namespaces' if hosts.netns else 'loopback'}), "
              f"--grace {args.grace} --heartbeat-timeout {args.heartbeat}, median of {args.runs}")
        for name, fault in scenarios.items():
            times = []
            for i in range(args.runs):
                job = f"bench-ssh-{os.getpid()}-{len(times)}-{abs(hash(name)) % 1000}-{i}"
                p = subprocess.Popen(
                    [harness.DLAUNCH, "--hosts", hosts_file, "--name", job, "--grace",
                     str(args.grace), "--heartbeat-timeout", str(args.heartbeat), "--",
                     "/usr/bin/python3", "-c", harness.STUBBORN_RANK],
                    env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                if not harness.wait_for(lambda: len(harness.processes_with_marker(job)) >= 6, 60):
                    raise SystemExit("ranks did not start")
                times.append(harness.time_fault_to_gone(p, job, fault))
                subprocess.run(["ip", "link", "set", veth, "up"], capture_output=True)
            print(f"  {name:28s} median {statistics.median(times):6.2f} s "
                  f"(min {min(times):.2f}, max {max(times):.2f})")


if __name__ == "__main__":
    main()
