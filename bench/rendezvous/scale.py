#!/usr/bin/env python3
"""Rendezvous at scale: node 0 is the real `dlaunch --nnodes N --node-rank 0`,
nodes 1..N-1 are simulated agents in load processes of their own (the real
handshake with the real HMAC, each answering Assign with its rank's exit and
AgentDone, reconnecting with dlaunch-agent's backoff).

The load is dlaunch-rdzv-load (bench/rendezvous/rdzv_load.cpp, `--load cpp`),
the default when the build being measured has it next to its dlaunch, or
tests/integration/rdzv_load.py (`--load py`): same flags, protocol flow and
summary. At 10,000 nodes on 2 cores the Python load costs about 3 CPU-seconds,
taken from the cores node 0 runs on, the C++ one about 1.5 (most of it the
kernel's loopback TCP work, node 0's receive side included). A build without
dlaunch-rdzv-load gets the first one of the other --build directories under
`--load cpp`. Which load ran is printed with the machine line and for each run.

For each N and each build it prints (and with --json writes, one object per
run): the result (dlaunch's exit code, or the signal that ended it), seconds
from dlaunch's start to its exit, seconds until the last load agent had its
Assign, node 0's peak RSS (VmHWM) and CPU time (user+sys), and how often load
agents had to reconnect (a connection closed before Welcome: a handshake
eviction or a refused connect).

    bench/rendezvous/scale.py --build after=build/bin --build before=/tmp/wt-before/build/bin \\
        --nodes 1000,2500,3000,10000,20000 --write bench/results/rendezvous_scale.md

Runs are one at a time: node 0 and the load share the machine's cores."""

import argparse
import json
import os
import platform
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
import rdzv_load  # noqa: E402
from harness import free_port  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


def proc_status_kib(pid, field):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return None


def proc_cpu_s(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICK  # utime, stime
    except (OSError, ValueError, IndexError):
        return None


def proc_children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(c) for c in f.read().split()]
    except (OSError, ValueError):
        return []


def proc_descendants(pid):
    out, todo = [], [pid]
    while todo:
        for child in proc_children(todo.pop()):
            out.append(child)
            todo.append(child)
    return out


def machine():
    mem = ""
    try:
        with open("/proc/meminfo") as f:
            kib = int(f.readline().split()[1])
        mem = f"{kib / 1024 / 1024:.1f} GiB RAM"
    except (OSError, ValueError):
        pass
    cpu = ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{os.cpu_count()} cores ({cpu}), {mem}, Linux {platform.release()}"


def cpu_list(text):
    """'0,1' or '2-15' or '0-1,4' -> a set of CPU numbers (None for '')."""
    if not text:
        return None
    cpus = set()
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return cpus


LOAD_BINARY = "dlaunch-rdzv-load"


class CppLoad:
    """dlaunch-rdzv-load with rdzv_load.Load's interface. Its own parent
    process forks the workers and merges their summaries (and reaps them, so
    their CPU time reaches this process's RUSAGE_CHILDREN)."""

    def __init__(self, binary, port, secret_file, nnodes, procs=None, nproc=1, fail_node=-1,
                 fail_code=3, close_all_on_stop=False, jitter=0.0, timeout=120.0,
                 host="127.0.0.1", seed=0, cpus=None, blind_nodes=""):
        self.cpus = cpus
        self.nnodes = nnodes
        self.argv = [
            binary, "--port", str(port), "--secret-file", secret_file, "--host", host,
            "--nnodes", str(nnodes), "--procs", str(procs or rdzv_load.default_procs()),
            "--nproc", str(nproc), "--fail-node", str(fail_node), "--fail-code", str(fail_code),
            "--jitter", str(jitter), "--timeout", str(timeout), "--seed", str(seed),
        ] + (["--close-all-on-stop"] if close_all_on_stop else []) + (
            ["--blind-node", blind_nodes] if blind_nodes else [])
        self.popen = None

    def start(self):
        self.popen = subprocess.Popen(
            self.argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            preexec_fn=(lambda: os.sched_setaffinity(0, self.cpus)) if self.cpus else None)
        return [self.popen]

    def wait(self, timeout=None):
        try:
            out, err = self.popen.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.popen.kill()  # its workers die with it (PR_SET_PDEATHSIG)
            out, err = self.popen.communicate()
        try:
            return json.loads(out)
        except ValueError:
            count = max(0, self.nnodes - 1)
            return {"agents": count, "outcomes": {"worker_failed": count}, "stop_codes": {},
                    "attempts": 0, "assigned": 0, "stats": {}, "times": {},
                    "errors": [f"{LOAD_BINARY} exited with {self.popen.returncode}: "
                               f"{err[-2000:]}"]}

    def kill(self):
        if self.popen.poll() is None:
            self.popen.kill()
        self.popen.communicate()


def pick_loads(choice, builds):
    """Per build: ("cpp", binary) or ("py", None). `choice` None: cpp where the
    build has dlaunch-rdzv-load next to its dlaunch, else py."""
    own = {name: os.path.join(bin_dir, LOAD_BINARY) for name, bin_dir in builds}
    own = {name: path for name, path in own.items() if os.access(path, os.X_OK)}
    fallback = next(iter(own.values()), None)
    loads = {}
    for name, _ in builds:
        kind = choice or ("cpp" if name in own else "py")
        if kind == "py":
            loads[name] = ("py", None)
        elif own.get(name) or fallback:
            loads[name] = ("cpp", own.get(name) or fallback)
        else:
            sys.exit(f"scale.py: --load cpp: no {LOAD_BINARY} in any --build directory "
                     "(ninja -C BUILD dlaunch-rdzv-load, or bench/rendezvous/build_release.sh)")
    return loads


def describe_load(load):
    kind, binary = load
    return f"cpp ({binary})" if kind == "cpp" else "py (tests/integration/rdzv_load.py)"


def agent_jitter(nodes):
    """dlaunch-agent's first-connect jitter at `nodes` nodes, in seconds
    (RendezvousClient::jitter_for; its few probe scouts, which connect at once,
    are left out)."""
    return 0.0 if nodes <= 1000 else min(nodes // 20, 5000) / 1000


def jitter_for(arg, nodes):
    return agent_jitter(nodes) if arg == "agent" else float(arg)


def run_one(bin_dir, nodes, procs, timeout, jitter, perf_out=None, verbose=False, storm=False,
            node0_cpus=None, load_cpus=None, load_kind=("py", None), blind_nodes="", keep=None,
            node0_args=()):
    tmp = tempfile.mkdtemp(prefix="dlaunch-scale-")
    secret = os.path.join(tmp, "secret")
    with open(secret, "w") as f:
        f.write(os.urandom(24).hex() + "\n")
    os.chmod(secret, 0o600)
    port = free_port()
    env = dict(os.environ, DLAUNCH_STATE_DIR=os.path.join(tmp, "state"))
    err_path = os.path.join(tmp, "stderr")
    cmd = [os.path.join(bin_dir, "dlaunch"), "--nnodes", str(nodes), "--node-rank", "0",
           "--master-addr", "127.0.0.1", "--rdzv-port", str(port), "--secret-file", secret,
           "--nproc-per-node", "1", "--name", f"scale-{nodes}-{os.getpid()}",
           "--log-dir", os.path.join(tmp, "logs"), "--rdzv-timeout", str(int(timeout)),
           *node0_args, "--", "true"]
    # storm: rank N/2 exits with code 3 and every agent's connection closes
    # while node 0 writes Stop (the double free of the old send path).
    load_args = dict(procs=procs, timeout=timeout + 10, jitter=jitter,
                     fail_node=nodes // 2 if storm else -1, fail_code=3, close_all_on_stop=storm,
                     cpus=load_cpus)
    if load_kind[0] == "cpp":
        load = CppLoad(load_kind[1], port, secret, nodes, blind_nodes=blind_nodes, **load_args)
    else:
        load = rdzv_load.Load(port, secret, nodes, **load_args)
    perf = None
    children_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(err_path, "w") as err_file:
        start_wall = time.time()
        start = time.monotonic()
        # node 0's local agent and rank inherit its CPU set.
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err_file, env=env,
                             preexec_fn=(lambda: os.sched_setaffinity(0, node0_cpus))
                             if node0_cpus else None)
        load.start()
        if perf_out:
            perf = subprocess.Popen(["perf", "record", "-F", "997", "-g", "-o", perf_out, "-p",
                                     str(p.pid)], stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)
        hwm = rss_peak = cpu = None
        agent_cpu = {}  # node 0's descendants: its local agent (two processes), the rank
        descendant_hwm = {}  # and its rendezvous relays, when it has some: their peak RSS
        status = usage = None
        killed = False
        while True:
            pid, status, usage = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            hwm = proc_status_kib(p.pid, "VmHWM") or hwm
            rss = proc_status_kib(p.pid, "VmRSS")
            if rss is not None:
                rss_peak = max(rss_peak or 0, rss)
            cpu = proc_cpu_s(p.pid) or cpu
            for child in proc_descendants(p.pid):
                agent_cpu[child] = proc_cpu_s(child) or agent_cpu.get(child, 0.0)
                descendant_hwm[child] = (proc_status_kib(child, "VmHWM")
                                         or descendant_hwm.get(child, 0))
            if time.monotonic() - start > timeout + 30 and not killed:
                p.send_signal(signal.SIGKILL)
                killed = True
            time.sleep(0.02)
        elapsed = time.monotonic() - start
        p.returncode = os.waitstatus_to_exitcode(status)
    summary = load.wait(timeout=30)
    load.kill()
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    load_sys = children.ru_stime - children_before.ru_stime - usage.ru_stime
    load_cpu = (children.ru_utime + children.ru_stime - children_before.ru_utime
                - children_before.ru_stime - usage.ru_utime - usage.ru_stime)
    if perf:
        try:
            perf.wait(timeout=30)
        except subprocess.TimeoutExpired:
            perf.send_signal(signal.SIGINT)
            perf.wait()
    with open(err_path, errors="replace") as f:
        stderr = f.read()
    code = p.returncode
    if killed:
        result = "hung (killed)"
    elif code < 0:
        result = f"crash: {signal.Signals(-code).name}"
    else:
        result = f"exit {code}"
    if "double free" in stderr:
        result += " (double free)"
    last_assign = summary["times"].get("last_assign")
    row = {
        "nodes": nodes,
        "scenario": "fail+close" if storm else "ok",
        "jitter_s": jitter,
        "result": result,
        "seconds": elapsed,
        "assigned_s": (last_assign - start_wall) if last_assign else None,
        "hwm_mib": (hwm or usage.ru_maxrss) / 1024,
        "rss_mib": (rss_peak or 0) / 1024,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "cpu_proc_s": cpu,
        "load_cpu_s": load_cpu,
        "load_sys_s": load_sys,
        "cpu_sys_s": usage.ru_stime,
        "reconnects": summary["stats"].get("closed_before_welcome", 0),
        "refused": summary["stats"].get("connect_errors", 0),
        "outcomes": summary["outcomes"],
        "stderr_tail": stderr[-600:],
        "descendant_hwm_mib": sorted(v / 1024 for v in descendant_hwm.values()),
    }
    if keep:
        # dlaunch's whole stderr and the load's summary, for a run to be read later.
        with open(keep + ".stderr", "w") as f:
            f.write(stderr)
        with open(keep + ".json", "w") as f:
            json.dump({"row": row, "load": summary}, f, indent=1)
    if verbose:
        print(f"    load: {describe_load(load_kind)}", flush=True)
        steps = ", ".join(f"{k} {v - start_wall:.2f}" for k, v in sorted(
            summary["times"].items(), key=lambda kv: kv[1] or 0) if v)
        print(f"    load timeline (s from start): {steps}", flush=True)
        print(f"    load stats: {summary['stats']}", flush=True)
        print(f"    node 0's descendants (agent, rank, relays), CPU s at their last sample: "
              f"{sorted(round(v, 2) for v in agent_cpu.values())}, peak RSS MiB: "
              f"{sorted(round(v / 1024, 1) for v in descendant_hwm.values())}", flush=True)
        print(f"    load outcomes {summary['outcomes']}, errors {summary['errors'][:3]}; "
              f"system CPU s: node 0 {usage.ru_stime:.2f}, load {load_sys:.2f}", flush=True)
        if code != 0:
            lines = [l if len(l) <= 300 else l[:300] + f"... ({len(l):,} characters)"
                     for l in stderr.strip().splitlines()[-5:]]
            print("    dlaunch stderr tail:\n      " + "\n      ".join(lines), flush=True)
    shutil.rmtree(tmp, ignore_errors=True)
    return row


HEADER = ("| build | nodes | job | result | s to exit | s to last Assign | node 0 peak RSS MiB | "
          "node 0 CPU s | load CPU s | reconnects | refused connects |")
RULE = "| --- | ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"


def fmt(build, r):
    assigned = f"{r['assigned_s']:.2f}" if r["assigned_s"] is not None else "-"
    return (f"| {build} | {r['nodes']:,} | {r['scenario']} | {r['result']} | {r['seconds']:.2f} | {assigned} | "
            f"{r['hwm_mib']:.0f} | {r['cpu_s']:.2f} | {r['load_cpu_s']:.2f} | "
            f"{r['reconnects']:,} | {r['refused']:,} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", action="append", default=[],
                    help="NAME=BIN_DIR (repeat); default: after=build/bin")
    ap.add_argument("--nodes", default="1000,2500,3000,10000,20000",
                    help="comma-separated --nnodes values (agents = nodes - 1 plus node 0's own)")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--storm", action="store_true",
                    help="the job fails (rank N/2 exits 3) and every load connection closes "
                    "while node 0 writes Stop; the expected result is exit 3")
    ap.add_argument("--procs", type=int, default=rdzv_load.default_procs(),
                    help="load processes")
    ap.add_argument("--jitter", default="agent",
                    help="load agents' random delay before their first connect: seconds, or "
                    "'agent' (the default): what dlaunch-agent waits at that many nodes, "
                    "uniform in [0, N/20 ms] above 1,000 nodes, at most 5 s; 0 is a storm "
                    "no real fleet of agents makes")
    ap.add_argument("--timeout", type=float, default=60.0, help="per run (also --rdzv-timeout)")
    ap.add_argument("--perf", help="record node 0 with perf into this file (one run only)")
    ap.add_argument("--write", help="write the table as markdown into this file")
    ap.add_argument("--json", help="write every run's figures as a JSON list into this file "
                    "(what bench/suite/rendezvous_scale.py reads)")
    ap.add_argument("--node0-cpus", default="",
                    help="pin node 0 (and its agent and rank) to these CPUs, e.g. 0-1")
    ap.add_argument("--load-cpus", default="", help="pin the load processes to these CPUs")
    ap.add_argument("--blind-node", default="",
                    help="these load nodes (a comma list) reach none of node 0's addresses: "
                    f"{LOAD_BINARY} --blind-node; cpp load only")
    ap.add_argument("--node0-arg", action="append", default=[],
                    help="one more argument for dlaunch (node 0), e.g. -v (repeat)")
    ap.add_argument("--keep", help="write each run's dlaunch stderr and load summary to "
                    "KEEP-<run>.stderr and KEEP-<run>.json")
    ap.add_argument("--load", choices=("cpp", "py"),
                    help=f"the load generator: cpp ({LOAD_BINARY}) or py (rdzv_load.py); "
                    f"default: cpp where the build has {LOAD_BINARY} next to its dlaunch")
    args = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    builds = [b.split("=", 1) for b in (args.build or [f"after={os.path.join(ROOT, 'build/bin')}"])]
    nodes = [int(n) for n in args.nodes.split(",")]
    node0_cpus, load_cpus = cpu_list(args.node0_cpus), cpu_list(args.load_cpus)
    loads = pick_loads(args.load, builds)
    if args.blind_node and any(kind == "py" for kind, _ in loads.values()):
        sys.exit("scale.py: --blind-node needs the C++ load (--load cpp)")
    pinning = (f"; node 0 on CPUs {args.node0_cpus or 'any'}, load on CPUs "
               f"{args.load_cpus or 'any'}; load: "
               + ", ".join(f"{name}={describe_load(loads[name])}" for name, _ in builds))
    print(f"machine: {machine()}; fd limit {hard}; load processes: {args.procs}{pinning}",
          flush=True)
    print(HEADER + "\n" + RULE, flush=True)
    rows = []
    for n in nodes:
        for name, bin_dir in builds:
            for _ in range(args.repeat):
                keep = f"{args.keep}-{len(rows) + 1}" if args.keep else None
                r = run_one(bin_dir, n, args.procs, args.timeout, jitter_for(args.jitter, n),
                            args.perf,
                            verbose=True, storm=args.storm, node0_cpus=node0_cpus,
                            load_cpus=load_cpus, load_kind=loads[name],
                            blind_nodes=args.blind_node, keep=keep, node0_args=args.node0_arg)
                rows.append((name, r))
                print(fmt(name, r), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump([dict(r, build=name, fd_limit=hard) for name, r in rows], f, indent=1)
    if args.write:
        with open(args.write, "w") as f:
            f.write("```\n" + " ".join(["bench/rendezvous/scale.py"] + sys.argv[1:]) + "\n```\n\n")
            f.write(f"machine: {machine()}; fd limit {hard}; load processes: {args.procs}"
                    f"{pinning}\n\n")
            f.write(HEADER + "\n" + RULE + "\n")
            for name, r in rows:
                f.write(fmt(name, r) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
