#!/usr/bin/env python3
"""Time from kill -9 of one node (its agent and its worker) to the first
training step after it, median of N runs, dlaunch against torchrun's c10d
elastic rendezvous, interleaved, on this machine.

- dlaunch: 3 local hosts + 1 spare (`transport = "local"`, `spare = true`),
  default settings, `--max-restarts 3`; node 1's agent and its rank are killed;
  the spare takes node 1 and the first step of round 1 ends the timing.
- torchrun (Debian's python3-torch, `python3 -m torch.distributed.run`): 3
  local agents, `--nnodes 2:3 --rdzv-backend c10d --rdzv-conf
  last_call_timeout=1`, `--max-restarts 3`; the third agent (not the one that
  holds the store) and its worker are killed; the first step at world size 2
  ends the timing.

Both run the same small DDP step (gloo all-reduce of a tensor, every 0.2 s)
and append "<unix time> <world> <restart> <rank> <process start>" to a file per
rank. For dlaunch the time is also split at the new ranks' process start (their
first line, before `import torch`): the launcher's share, then Python, torch
and init_process_group's.

usage: bench/failures/elastic_recovery.py [--runs 5]
"""

import argparse
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "integration"))
import harness  # noqa: E402

PY = "/usr/bin/python3"
STEP = r"""
import time
started = time.time()  # before torch: the launcher's share ends here
import os, sys, torch, torch.distributed as dist
dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
restart = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")
out = open(os.path.join(sys.argv[1], f"steps-{os.getpid()}"), "a")
while True:
    t = torch.ones(1000)
    dist.all_reduce(t)
    out.write(f"{time.time()} {world} {restart} {rank} {started}\n")
    out.flush()
    time.sleep(0.2)
"""


def steps(marks):
    """Every step line of every rank: (time, world, restart, rank, process start)."""
    found = []
    for name in os.listdir(marks):
        if name.startswith("steps-"):
            with open(os.path.join(marks, name)) as f:
                for line in f:
                    parts = line.split()
                    if len(parts) == 5:
                        found.append((float(parts[0]), int(parts[1]), int(parts[2]),
                                      int(parts[3]), float(parts[4])))
    return found


def first_step_after(marks, killed_at, done, timeout=120):
    """Seconds from killed_at to the first step that `done(world, restart)`
    accepts, and to the first start of a process that made such a step."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        after = [(t, s) for t, w, r, _, s in steps(marks) if t > killed_at and done(w, r)]
        if after:
            return min(t for t, _ in after) - killed_at, min(s for _, s in after) - killed_at
        time.sleep(0.05)
    raise SystemExit("no step after the kill")


def wait_steps(marks, count, log=None):
    """Until `count` steps are written; else stops, with the launcher's `log`."""
    if not harness.wait_for(lambda: len(steps(marks)) >= count, 120):
        said = open(log).read() if log and os.path.exists(log) else ""
        raise SystemExit("training did not start\n" + said)


def kill_tree(pid):
    for child in harness.children_of(pid):
        kill_tree(child)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def run_dlaunch(tmp, run):
    marks = tempfile.mkdtemp(dir=tmp)
    hosts = os.path.join(tmp, "hosts.toml")
    with open(hosts, "w") as f:
        for i, name in enumerate(["a", "b", "c", "d"]):
            f.write(f'[[host]]\nname = "{name}"\naddress = "127.0.0.1"\ntransport = "local"\n'
                    f'slots = 1\n{"spare = true" if i == 3 else ""}\n')
    job = f"elastic-bench-{os.getpid()}-{run}"
    env = dict(os.environ, DLAUNCH_STATE_DIR=os.path.join(tmp, "state"))
    p = subprocess.Popen([harness.DLAUNCH, "--hosts", hosts, "--name", job, "--max-restarts", "3",
                          "--", PY, "-c", STEP, marks], env=env, stdout=subprocess.DEVNULL,
                         stderr=open(os.path.join(tmp, f"dlaunch-{run}.err"), "w"))
    try:
        wait_steps(marks, 9, os.path.join(tmp, f"dlaunch-{run}.err"))
        rank1 = [pid for pid in harness.processes_with_marker(job)
                 if b"RANK=1" in open(f"/proc/{pid}/environ", "rb").read().split(b"\0")][0]
        agent = harness.parent_of(rank1)
        killed_at = time.time()
        os.kill(agent, signal.SIGKILL)
        os.kill(rank1, signal.SIGKILL)
        return first_step_after(marks, killed_at, lambda w, r: r >= 1 and w == 3)
    finally:
        p.send_signal(signal.SIGINT)
        try:
            p.wait(30)
        except subprocess.TimeoutExpired:
            p.kill()
        harness.kill_marker(job)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_torchrun(tmp, run):
    marks = tempfile.mkdtemp(dir=tmp)
    port = free_port()
    agents = []
    for _ in range(3):
        agents.append(subprocess.Popen(
            [PY, "-m", "torch.distributed.run", "--nnodes", "2:3", "--nproc_per_node", "1",
             "--rdzv_backend", "c10d", "--rdzv_endpoint", f"127.0.0.1:{port}", "--rdzv_id",
             f"bench{run}", "--rdzv_conf", "last_call_timeout=1", "--max_restarts", "3",
             "--no_python", PY, "-c", STEP, marks],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True))
        time.sleep(0.3)  # the first one started holds the store
    try:
        wait_steps(marks, 9)
        killed_at = time.time()
        kill_tree(agents[2].pid)
        return first_step_after(marks, killed_at, lambda w, r: w == 2)
    finally:
        for a in agents:
            try:
                os.killpg(a.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            a.wait()


def torchrun_problem():
    """Why this machine's torchrun cannot run a job, or None when it can."""
    r = subprocess.run([PY, "-m", "torch.distributed.run", "--nnodes", "1", "--nproc_per_node",
                        "1", "--no_python", "/bin/true"], capture_output=True, text=True,
                       timeout=120)
    if r.returncode == 0:
        return None
    return (r.stderr.strip().splitlines() or ["exit code " + str(r.returncode)])[-1]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    problem = torchrun_problem()
    if problem:
        print(f"torchrun cannot run a job here, so it is not measured: {problem}")
    results = {"dlaunch": []} if problem else {"dlaunch": [], "torchrun": []}
    launcher_share = []  # dlaunch: kill to the new ranks' process start
    with tempfile.TemporaryDirectory(prefix="dlaunch-elastic-bench-") as tmp:
        for run in range(args.runs):  # interleaved: A B A B
            line = f"run {run + 1}:"
            for name, measure in (("dlaunch", run_dlaunch), ("torchrun", run_torchrun)):
                if name in results:
                    total, started = measure(tmp, run)
                    results[name].append(total)
                    line += f" {name} {total:.2f} s"
                    if name == "dlaunch":
                        launcher_share.append(started)
                        line += f" (ranks started after {started:.2f} s)"
            print(line, flush=True)
    for name, times in results.items():
        print(f"{name}: median {statistics.median(times):.2f} s "
              f"(min {min(times):.2f}, max {max(times):.2f}, {len(times)} runs)")
    print(f"dlaunch: the new ranks' processes started a median {statistics.median(launcher_share):.2f} s "
          "after the kill; the rest is Python, torch's import and init_process_group")
    if "torchrun" in results:
        ratio = statistics.median(results["torchrun"]) / statistics.median(results["dlaunch"])
        print(f"dlaunch recovers {ratio:.1f}x faster than torchrun's c10d rendezvous")


if __name__ == "__main__":
    main()
