"""faults: time from a fault (kill -9 of a rank, of an agent, of the
coordinator, an agent or the coordinator frozen, a host's link cut) to the
last process of the job gone on every host, on one machine and over 3 SSH
hosts, against torchrun's elastic agent on the fault both have: a rank
killed. It replaced bench/failures/fault_to_gone.py and fault_to_gone_ssh.py
(dlaunch alone, runs of one fault back to back)."""

import math
import os
import signal
import statistics
import subprocess
import time
from dataclasses import dataclass, field

import cleanup
import harness  # found through cleanup's sys.path entry for tests/integration
import plot
import report
import sshd_harness

NAME = "faults"
GOAL = "dlaunch ends every process of the job faster than torchrun on the same fault"
PYTHON = "/usr/bin/python3"
TORCHRUN = "/usr/bin/torchrun"
GRACE, HEARTBEAT = 2, 5          # dlaunch's --grace and --heartbeat-timeout (defaults 10, 15)
TIMEOUT = 90.0                   # s after the fault: what is still running then is left behind
LINGER = 5.0                     # s after torchrun itself exited: nothing is left to end its rest
POLL = 0.02                      # s between two scans of /proc for the job's processes
LOCAL, SSH = "one machine, 2 ranks", "3 SSH hosts x 1 rank"
STUBBORN, PLAIN = "stubborn", "plain"
DLAUNCH = "dlaunch"

# The rank: a file in READY_DIR says it is set up. A stubborn one first leaves a
# grandchild in a session of its own that ignores SIGTERM (as a data loader
# started with setsid would) and ignores SIGTERM itself: the slowest job to end.
RANK = r"""
import os, signal, subprocess, sys, time
ready = os.path.join(sys.argv[1], os.environ["DLAUNCH_JOB"] + "." + os.environ["RANK"])
if sys.argv[2] == "stubborn":
    subprocess.Popen(["sh", "-c", 'trap "" TERM; : > "$0"; exec sleep 300', ready + ".child"],
                     start_new_session=True)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
open(ready, "w").close()
time.sleep(300)
"""


class NotStarted(Exception):
    pass


@dataclass
class Case:
    setting: str
    fault: str
    kind: str            # STUBBORN or PLAIN ranks
    launcher: str
    argv: object         # function of the job name: the launcher's command
    env: dict
    inject: object       # function of (launcher Popen, job): the fault; returns pids it froze
    ready: int           # files in the ready dir once every rank (and grandchild) is set up
    linger: object = None   # torchrun: LINGER; dlaunch: None (its agents outlive a lost coordinator)
    marks: bool = False     # the launcher's environment carries the job's marker (torchrun)
    restore: object = None  # called after every run (e.g. the link back up)
    times: list = field(default_factory=list)   # s, math.inf where processes were left
    left: list = field(default_factory=list)    # processes left behind, per run

    @property
    def label(self):
        return (self.setting, self.fault, self.kind, self.launcher)


def ranks_of(proc, job):
    """The job's ranks (the launcher itself may carry the marker: torchrun)."""
    return sorted(p for p in harness.processes_with_marker(job)
                  if p != proc.pid and harness.exe_name(p).startswith("python"))


def kill_rank(proc, job):
    os.kill(ranks_of(proc, job)[0], signal.SIGKILL)


def agent_of(proc, job):
    """The agent worker on the first rank's host: that rank's parent."""
    return harness.parent_of(ranks_of(proc, job)[0])


def kill_agent(proc, job):
    os.kill(agent_of(proc, job), signal.SIGKILL)


def freeze_agent(proc, job):
    pid = agent_of(proc, job)
    os.kill(pid, signal.SIGSTOP)
    return [pid]


def kill_coordinator(proc, job):
    os.kill(proc.pid, signal.SIGKILL)


def freeze_coordinator(proc, job):
    os.kill(proc.pid, signal.SIGSTOP)
    return [proc.pid]


def link(veth, state):
    return lambda *_: subprocess.run(["ip", "link", "set", veth, state], check=True,
                                     capture_output=True) and None


def dlaunch_argv(ctx, where, rank_py, ready_dir, kind):
    return lambda job: [os.path.join(ctx.bin_dir, "dlaunch"), *where, "--name", job, "--grace",
                        str(GRACE), "--heartbeat-timeout", str(HEARTBEAT), "--", PYTHON,
                        rank_py, ready_dir, kind]


def torchrun_argv(rank_py, ready_dir, kind):
    # torch 1.13 (Debian 12) on Python 3.11 cannot parse its own default
    # `--redirects 0`/`--tee 0`: a mapping for local rank 9, which does not exist
    # with 2 ranks, redirects nothing, as the default means to.
    return lambda job: [TORCHRUN, "--standalone", "--nproc_per_node", "2", "--redirects", "9:1",
                        "--tee", "9:1", "--no_python", PYTHON, rank_py, ready_dir, kind]


def local_cases(ctx, rank_py, ready_dir):
    """The rank kill with both kinds of ranks under both launchers first (A B A B),
    then dlaunch's other faults."""
    env = dict(os.environ, DLAUNCH_STATE_DIR=os.path.join(ctx.tmp, "state"))
    cases = []
    for kind, ready in ((STUBBORN, 4), (PLAIN, 2)):
        cases.append(Case(LOCAL, "kill -9 of a rank", kind, DLAUNCH,
                          dlaunch_argv(ctx, ["-n", "2"], rank_py, ready_dir, kind), env,
                          kill_rank, ready))
        if os.path.exists(TORCHRUN):
            # torchrun sets no marker of its own: its environment carries one to its ranks.
            cases.append(Case(LOCAL, "kill -9 of a rank", kind, "torchrun",
                              torchrun_argv(rank_py, ready_dir, kind), env, kill_rank, ready,
                              linger=LINGER, marks=True))
    for fault, inject in (("kill -9 of the agent", kill_agent),
                          ("kill -9 of the coordinator", kill_coordinator),
                          ("agent frozen (SIGSTOP)", freeze_agent),
                          ("coordinator frozen (SIGSTOP)", freeze_coordinator)):
        cases.append(Case(LOCAL, fault, STUBBORN, DLAUNCH,
                          dlaunch_argv(ctx, ["-n", "2"], rank_py, ready_dir, STUBBORN), env,
                          inject, 4))
    return cases


def ssh_cases(ctx, hosts, rank_py, ready_dir):
    hosts.write_known_hosts()
    argv = dlaunch_argv(ctx, ["--hosts", hosts.hosts_file([1, 1, 1])], rank_py, ready_dir,
                        STUBBORN)
    cases = [Case(SSH, fault, STUBBORN, DLAUNCH, argv, hosts.env(), inject, 6)
             for fault, inject in (("kill -9 of a rank", kill_rank),
                                   ("kill -9 of an agent", kill_agent),
                                   ("kill -9 of the coordinator", kill_coordinator))]
    if hosts.netns:
        veth = f"dv{hosts.tag}h2"   # the second host's end on the bridge (sshd_harness's name)
        cases.append(Case(SSH, "link of one host cut", STUBBORN, DLAUNCH, argv, hosts.env(),
                          link(veth, "down"), 6, restore=link(veth, "up")))
    return cases


def ready_count(ready_dir, job):
    return sum(1 for n in os.listdir(ready_dir) if n.startswith(job + "."))


def fault_to_gone(case, proc, job):
    """(seconds from the fault until no process of the job is left, processes left
    behind): math.inf and their count when some are still running TIMEOUT s after
    the fault, or `case.linger` s after the launcher itself exited. The frozen pids
    come back to be ended."""
    start = time.monotonic()
    frozen = case.inject(proc, job) or []
    exited = None
    while True:
        left = [p for p in harness.processes_with_marker(job) if p != proc.pid]
        now = time.monotonic()
        if not left:
            return now - start, 0, frozen
        if case.linger is not None and proc.poll() is not None:
            exited = exited or now
            if now - exited >= case.linger:
                return math.inf, len(left), frozen
        if now - start >= TIMEOUT:
            return math.inf, len(left), frozen
        time.sleep(POLL)


def run_case(case, job, ready_dir):
    """One run: starts the job, waits for every rank, injects the fault, times it,
    and ends whatever is left (the job's processes, the launcher, a frozen one)."""
    env = dict(case.env, DLAUNCH_JOB=job) if case.marks else case.env
    proc = subprocess.Popen(case.argv(job), env=cleanup.marked_env(env),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    frozen = []
    try:
        if not harness.wait_for(lambda: ready_count(ready_dir, job) >= case.ready
                                or proc.poll() is not None, 60):
            raise NotStarted("the ranks did not start in 60 s")
        if proc.poll() is not None:
            raise NotStarted(f"the launcher exited {proc.returncode} before the fault")
        elapsed, left, frozen = fault_to_gone(case, proc, job)
        return elapsed, left
    finally:
        harness.kill_marker(job)
        for pid in frozen:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        if case.restore:
            case.restore()
        try:
            proc.wait(15)   # a launcher ends itself once its job is gone
        except subprocess.TimeoutExpired:
            pass
        cleanup.kill_group(proc.pid)   # its agents, where it was killed or frozen
        cleanup.stop(proc)


def measure_all(ctx, cases, ready_dir):
    """Every case once per round, warm-up rounds first (A B A B ...); a case whose
    ranks do not start, or whose fault cannot be injected, is left out from then on."""
    failures, n = {}, 0
    for round_ in range(ctx.warmup + ctx.runs):
        for c in cases:
            if c.label in failures:
                continue
            n += 1
            job = f"bench-faults-{os.getpid()}-{n}"
            try:
                elapsed, left = run_case(c, job, ready_dir)
            except Exception as e:  # a run that cannot start or inject: that case is left out
                failures[c.label] = str(e)
                ctx.log(f"  {c.setting}, {c.fault}, {c.kind}, {c.launcher}: failed, left out: {e}")
                continue
            what = "warm-up" if round_ < ctx.warmup else f"run {round_ - ctx.warmup + 1}"
            ctx.log(f"  {what}: {c.setting}, {c.fault}, {c.kind} ranks, {c.launcher}: "
                    + (f"{elapsed:.2f} s" if left == 0 else f"{left} process(es) left behind"))
            if round_ >= ctx.warmup:
                c.times.append(elapsed)
                c.left.append(left)
    return failures


def seconds(x):
    return f"{x:.2f}" if math.isfinite(x) else "never"


def rows(cases):
    by_fault = {(c.setting, c.fault, c.kind): c for c in cases if c.launcher == DLAUNCH and c.times}
    out = []
    for c in cases:
        if not c.times:
            continue
        med = statistics.median(c.times)
        ref = by_fault.get((c.setting, c.fault, c.kind))
        ratio = "-"
        if ref:
            r = statistics.median(ref.times)
            ratio = (f"{med / r:.2f}" if math.isfinite(med) and math.isfinite(r)
                     else "∞" if math.isfinite(r) else "-")
        bad = [n for n in c.left if n]
        left = f"{len(bad)} of {len(c.left)} ({max(bad)} processes)" if bad else "none"
        out.append([c.setting, c.fault, c.kind, c.launcher, seconds(med), seconds(min(c.times)),
                    seconds(max(c.times)), str(len(c.times)), left, ratio])
    return out


def verdict(result, cases):
    compared = []
    for c in cases:
        if c.launcher == DLAUNCH or not c.times:
            continue
        d = next((x for x in cases if x.launcher == DLAUNCH and x.times
                  and (x.setting, x.fault, x.kind) == (c.setting, c.fault, c.kind)), None)
        if d:
            compared.append((d, c))
    leaky = [d for d in cases if d.launcher == DLAUNCH and any(d.left)]
    if not compared:
        result.verdict = "torchrun is missing or failed: nothing to compare"
        return
    faster = all(statistics.median(d.times) < statistics.median(t.times) for d, t in compared)
    result.met = faster and not leaky
    parts = []
    for d, t in compared:
        dm, tm = statistics.median(d.times), statistics.median(t.times)
        parts.append(f"{d.fault}, {d.kind} ranks: dlaunch {seconds(dm)} s, {t.launcher} "
                     + (f"{seconds(tm)} s ({tm / dm:.1f}x)" if math.isfinite(tm)
                        else f"never (left {max(t.left)} processes)"))
    done = [d for d in cases if d.launcher == DLAUNCH and d.times]
    parts.append(f"dlaunch left nothing behind on any of its {len(done)} fault cases" if not leaky
                 else "dlaunch left processes behind on: "
                 + ", ".join(f"{d.setting}, {d.fault}" for d in leaky))
    result.verdict = "; ".join(parts)


def plots(ctx, result, cases):
    short = {"kill -9 of a rank": "rank", "kill -9 of the agent": "agent",
             "kill -9 of an agent": "agent", "kill -9 of the coordinator": "coordinator",
             "agent frozen (SIGSTOP)": "agent STOP", "coordinator frozen (SIGSTOP)": "coord. STOP",
             "link of one host cut": "link cut"}
    for setting, name in ((LOCAL, "faults-local.png"), (SSH, "faults-ssh.png")):
        bars = []
        for c in cases:
            if c.setting != setting or not c.times or not math.isfinite(statistics.median(c.times)):
                continue
            finite = [t for t in c.times if math.isfinite(t)]
            label = short.get(c.fault, c.fault) + (", plain" if c.kind == PLAIN else "")
            bars.append((f"{label}: {c.launcher}", statistics.median(c.times), min(finite),
                         max(finite)))
        if not bars:
            continue
        png = os.path.join(ctx.plots_dir, name)
        plot.bars(png, f"{setting}: s from the fault to the last process gone (median, min-max)",
                  "s", bars, fmt="%.2f", slanted=True)
        result.plots.append((f"faults: {setting} (cases whose median is never are not drawn)",
                             png))


def run(ctx):
    work = os.path.join(ctx.tmp, "faults")
    ready_dir = os.path.join(work, "ready")
    os.makedirs(ready_dir)
    rank_py = os.path.join(work, "rank.py")
    with open(rank_py, "w") as f:
        f.write(RANK)
    cases = local_cases(ctx, rank_py, ready_dir)
    notes = []
    if sshd_harness.have_sshd():
        # Sessions get an empty HOME, as in ssh-hosts: root's ~/.bashrc here runs
        # `pyenv init`, over a second per login.
        home = os.path.join(ctx.tmp, "remote-home")
        os.makedirs(home, exist_ok=True)
        with sshd_harness.SshHosts(3, sshd_extra=f"SetEnv HOME={home}\n") as hosts:
            cases += ssh_cases(ctx, hosts, rank_py, ready_dir)
            if not hosts.netns:
                notes.append("The SSH hosts are loopback ports (not root, or no `ip netns`): "
                             "no link to cut, so that fault is left out.")
            where = ("network namespaces on a bridge" if hosts.netns else "loopback ports")
            ctx.log(f"{NAME}: {len(cases)} cases (SSH hosts: {where})")
            failures = measure_all(ctx, cases, ready_dir)
    else:
        notes.append("No /usr/sbin/sshd: the SSH cases are left out.")
        ctx.log(f"{NAME}: {len(cases)} cases (no sshd)")
        failures = measure_all(ctx, cases, ready_dir)
    result = report.Result(
        NAME, "fault to the last process of the job gone",
        f"Each run starts a job of ranks that sleep (`{PYTHON} rank.py`), waits until every rank "
        f"is set up, injects the fault and times until no process carrying the job's marker "
        f"(`DLAUNCH_JOB=<job>` in its environment: the ranks and everything they started) is "
        f"left on any host; the launcher's own processes are not counted. *{STUBBORN}* ranks "
        f"ignore SIGTERM and each leaves a grandchild in a session of its own that ignores "
        f"SIGTERM too (what the old scripts measured: the slowest job to end); *{PLAIN}* ranks "
        f"do neither. *{LOCAL}*: `dlaunch -n 2 --grace {GRACE} --heartbeat-timeout {HEARTBEAT} "
        f"-- ...` against `/usr/bin/torchrun --standalone --nproc_per_node 2 --redirects 9:1 "
        f"--tee 9:1 --no_python ...` (its elastic agent, `--max_restarts` at its default 0, the marker in "
        f"its environment). *{SSH}*: `dlaunch --hosts` over real sshd's from "
        f"`tests/integration/sshd_harness.py`, same flags; torchrun has no SSH launch, so no "
        f"peer there. Faults: `kill -9` of a rank, of the agent (the rank's parent), of the "
        f"coordinator; SIGSTOP of the agent or the coordinator; `ip link set <veth> down` for "
        f"the second host's link (namespaces only). *÷ dlaunch median*: the launcher's median "
        f"over dlaunch's on the same fault and ranks. Times are as fine as the scan of /proc "
        f"for the marker, every {POLL * 1000:.0f} ms.", GOAL,
        tables=[report.Table(["setting", "fault", "ranks", "launcher", "median s", "min s",
                              "max s", "runs", "runs with processes left behind",
                              "÷ dlaunch median"], rows(cases))])
    verdict(result, cases)
    result.notes += notes
    result.notes += [f"{', '.join(k)}: failed, left out: `{v}`" for k, v in failures.items()]
    result.notes.append(f"*never*: processes of the job were still running {LINGER:.0f} s after "
                        f"torchrun itself had exited (nothing of the launcher was left to end "
                        f"them) or {TIMEOUT:.0f} s after the fault; they were then killed. "
                        f"torchrun 1.13 stops its workers with SIGTERM to each worker's pid "
                        f"alone, waits up to 30 s (not a command-line option), then SIGKILLs "
                        f"them: a grandchild in a session of its own is never signalled. It "
                        f"notices a dead worker at its next `--monitor_interval` poll (default "
                        f"5 s).")
    result.notes.append(f"dlaunch runs with `--grace {GRACE} --heartbeat-timeout {HEARTBEAT}` "
                        f"(defaults 10 and 15), as the old scripts did: the faults that only "
                        f"heartbeats reveal (a frozen agent or coordinator, a cut link) scale with "
                        f"the heartbeat timeout; stubborn ranks get SIGKILL after the grace.")
    result.notes.append("Not measured against torchrun: `kill -9` or SIGSTOP of torchrun "
                        "itself, and the SSH faults (it has no SSH launch).")
    plots(ctx, result, cases)
    return result
