"""Shared helpers for dlaunch's integration tests: where the binaries are,
running dlaunch with a private state dir, and scanning /proc for processes that
still carry a job's DLAUNCH_JOB marker."""

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

BIN_DIR = os.environ.get(
    "DLAUNCH_BIN_DIR",
    os.path.join(os.path.dirname(__file__), "..", "..", "build", "bin"))
DLAUNCH = os.path.join(BIN_DIR, "dlaunch")
AGENT = os.path.join(BIN_DIR, "dlaunch-agent")
SKIP = 77


def require_binaries(*names):
    """Exit with the skip code when a binary this test file needs is missing."""
    for name in names or ("dlaunch", "dlaunch-agent"):
        path = os.path.join(BIN_DIR, name)
        if not os.access(path, os.X_OK):
            print(f"SKIP: {path} is not built")
            sys.exit(SKIP)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def connectable(port):
    """Whether something accepts connections on 127.0.0.1:`port`."""
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


def processes_with_marker(job):
    """PIDs whose environment holds DLAUNCH_JOB=<job> (every namespace shares /proc)."""
    marker = f"DLAUNCH_JOB={job}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                env = f.read().split(b"\0")
        except OSError:
            continue
        if marker in env:
            found.append(int(entry))
    return found


def kill_process_groups(procs):
    """SIGKILLs the process group of each process still running (each was
    started in a session of its own) and reaps it."""
    for p in procs:
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except OSError:
                pass
            p.wait()


def wait_no_marker(job, timeout=10.0):
    """Waits until no process carries the marker; returns those left at the end."""
    deadline = time.monotonic() + timeout
    left = processes_with_marker(job)
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = processes_with_marker(job)
    return left


def end_job_process(proc, job):
    """A test's coordinator and what it started, gone: `proc` (None, or a
    Popen with pipes) killed if it still runs and reaped, then every process
    carrying the job's marker."""
    if proc is not None:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()
    kill_marker(job)


def kill_marker(job):
    for pid in processes_with_marker(job):
        try:
            os.kill(pid, 9)
        except OSError:
            pass


def kill_coordinators(state_dir):
    """Kills the coordinators of active jobs under a state dir (detached ones
    are nobody's child); their agents and ranks then follow."""
    import tomllib
    if not os.path.isdir(state_dir):
        return
    for name in os.listdir(state_dir):
        try:
            with open(os.path.join(state_dir, name, "job.toml"), "rb") as f:
                record = tomllib.load(f)
        except (OSError, ValueError):
            continue
        pid = record.get("coordinator_pid", 0)
        if record.get("status") in ("PENDING", "RUNNING", "RESTARTING") and pid > 0 \
                and exe_name(pid) == "dlaunch":
            try:
                os.kill(pid, 9)
            except OSError:
                pass


def dlaunch(args, env=None, timeout=120, **kwargs):
    """Runs dlaunch with `args` to its end; its output as text in the result.
    `kwargs` go to subprocess.run (input=, cwd=, ...)."""
    return subprocess.run([DLAUNCH, *args], capture_output=True, text=True, timeout=timeout,
                          env=env, **kwargs)


class DlaunchTestCase(unittest.TestCase):
    """Gives each test a temp dir and state dir, and kills anything of its jobs
    left behind, also when the test fails."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="dlaunch-test-")
        self.state = os.path.join(self.tmp, "state")
        self.jobs = []
        self.procs = []

    def tearDown(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.communicate()
        kill_coordinators(self.state)
        for job in self.jobs:
            kill_marker(job)
        shutil.rmtree(self.tmp, ignore_errors=True)

    def job_name(self, base):
        name = f"{base}-{os.getpid()}-{len(self.jobs)}-{int(time.time() * 1000) % 100000}"
        self.jobs.append(name)
        return name

    def env(self, **extra):
        env = dict(os.environ)
        env["DLAUNCH_STATE_DIR"] = self.state
        env.update(extra)
        return env

    def run_dlaunch(self, args, timeout=120, **kwargs):
        return dlaunch(args, kwargs.pop("env", self.env()), timeout, **kwargs)

    def start_dlaunch(self, args, **kwargs):
        p = subprocess.Popen([DLAUNCH] + list(args), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True,
                             env=kwargs.pop("env", self.env()), **kwargs)
        self.procs.append(p)
        return p

    def write(self, name, text, mode=0o644):
        path = os.path.join(self.tmp, name)
        with open(path, "w") as f:
            f.write(text)
        os.chmod(path, mode)
        return path

    def assertNothingLeft(self, job, timeout=10.0):
        left = wait_no_marker(job, timeout)
        self.assertEqual(left, [], f"processes of job {job} still running: {left}")


def children_of(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def exe_name(pid):
    try:
        return os.path.basename(os.readlink(f"/proc/{pid}/exe"))
    except OSError:
        return ""


def agents_in(ns):
    """Pids of dlaunch-agent processes inside a network namespace."""
    r = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True, timeout=60)
    found = []
    for pid in r.stdout.split():
        try:
            with open(f"/proc/{pid}/comm") as f:
                if f.read().strip().startswith("dlaunch-agent"):
                    found.append(int(pid))
        except OSError:
            pass
    return found


def vm_hwm_kib(pid):
    """A process's peak resident memory (VmHWM) in KiB, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def cpu_seconds(pid):
    """User plus system CPU seconds of a process, all its threads included."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_for(predicate, timeout=30.0, interval=0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    return predicate()


# A rank that, on every rank, leaves a setsid grandchild that ignores SIGTERM,
# ignores SIGTERM itself, prints "ready" and sleeps. Rank $FAIL_RANK exits 4
# after $FAIL_AFTER seconds when set.
STUBBORN_RANK = r"""
import os, signal, subprocess, sys, time
subprocess.Popen(["sh", "-c", "trap '' TERM; sleep 300"], start_new_session=True)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
print("ready", os.environ["RANK"], flush=True)
if os.environ.get("FAIL_RANK") == os.environ["RANK"]:
    time.sleep(float(os.environ.get("FAIL_AFTER", "0.5")))
    sys.exit(4)
time.sleep(300)
"""


def parent_of(pid):
    """The parent pid from /proc/<pid>/stat, or 0 when the process is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return 0


def agent_workers_of(job):
    """The agent workers of a job: the parents of its ranks (other jobs may run
    agents on this machine at the same time)."""
    return sorted({parent_of(pid) for pid in processes_with_marker(job)
                   if exe_name(parent_of(pid)).startswith("agent-")})
