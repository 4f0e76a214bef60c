#!/usr/bin/env python3
"""Launch overhead of dlaunch against Open MPI's mpirun, measured side by side in
one run: wall time of 8 ranks of /bin/true (median of N runs each, interleaved so
that both see the same machine state), and the peak RSS (VmHWM) of the dlaunch
coordinator and its agent while they run 8 ranks.

usage: bench/core/launch_overhead.py [--runs N] [--bin build/bin]
"""

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "tests", "integration"))
from harness import vm_hwm_kib  # noqa: E402


def timed(cmd, env):
    start = time.perf_counter()
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    elapsed = time.perf_counter() - start
    if r.returncode != 0:
        raise SystemExit(f"{cmd[0]} failed ({r.returncode}): {r.stderr.decode()[-500:]}")
    return elapsed


def children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def peak_rss(dlaunch, env):
    """Runs 8 ranks of `sleep 2` and samples the coordinator's and agent's VmHWM."""
    p = subprocess.Popen([dlaunch, "-n", "8", "--", "sleep", "2"], env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    coord = guardian = worker = 0
    while p.poll() is None:
        coord = max(coord, vm_hwm_kib(p.pid) or 0)
        for child in children(p.pid):
            if not is_agent(child):
                continue
            guardian = max(guardian, vm_hwm_kib(child) or 0)
            for grandchild in children(child):
                if is_agent(grandchild):
                    worker = max(worker, vm_hwm_kib(grandchild) or 0)
        time.sleep(0.05)
    return coord, guardian, worker


def is_agent(pid):
    try:
        return os.readlink(f"/proc/{pid}/exe").endswith("dlaunch-agent")
    except OSError:
        return False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--bin", default=os.path.join(os.path.dirname(__file__), "..", "..", "build", "bin"))
    args = ap.parse_args()
    dlaunch = os.path.abspath(os.path.join(args.bin, "dlaunch"))
    mpirun = shutil.which("mpirun")
    if not mpirun:
        raise SystemExit("mpirun not found: apt-get install openmpi-bin")
    state = tempfile.mkdtemp(prefix="dlaunch-bench-")
    env = dict(os.environ, DLAUNCH_STATE_DIR=state, OMPI_MCA_plm_rsh_agent="false")
    mpi = [mpirun, "--allow-run-as-root", "--oversubscribe", "-np", "8", "/bin/true"]
    dl = [dlaunch, "--nproc-per-node", "8", "--", "/bin/true"]
    for _ in range(3):  # warm caches for both
        timed(dl, env)
        timed(mpi, env)
    t_dl, t_mpi = [], []
    for _ in range(args.runs):
        t_dl.append(timed(dl, env))
        t_mpi.append(timed(mpi, env))
    m_dl, m_mpi = statistics.median(t_dl), statistics.median(t_mpi)
    print(f"8 x /bin/true, median of {args.runs} runs each, interleaved:")
    print(f"  dlaunch --nproc-per-node 8: {m_dl * 1000:8.1f} ms")
    print(f"  mpirun -np 8:               {m_mpi * 1000:8.1f} ms")
    print(f"  ratio mpirun/dlaunch:       {m_mpi / m_dl:8.2f}x")
    coord, guardian, worker = peak_rss(dlaunch, env)
    print(f"peak RSS with 8 ranks: coordinator {coord / 1024:.1f} MiB, agent worker "
          f"{worker / 1024:.1f} MiB (+ its guardian process {guardian / 1024:.1f} MiB)")
    shutil.rmtree(state, ignore_errors=True)


if __name__ == "__main__":
    main()
