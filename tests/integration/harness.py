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
            why = " (needs LibTorch: libtorch-dev libgloo-dev)" if name == "mnist_dist" else ""
            skip_file(f"not built: {path}{why}")


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
    """The job's ranks: PIDs whose environment holds DLAUNCH_JOB=<job> (every
    namespace shares /proc)."""
    return processes_with_environment({f"DLAUNCH_JOB={job}".encode()})


def job_processes(job):
    """Everything the job started: its ranks (DLAUNCH_JOB=<job>) and its
    agents with what they start, guardian, worker and helpers
    (DLAUNCH_AGENT_JOB=<job>, launcher/transport/transport.h). Zombies count:
    a process nobody reaped is left over too."""
    return processes_with_environment({f"DLAUNCH_JOB={job}".encode(),
                                       f"DLAUNCH_AGENT_JOB={job}".encode()})


def processes_with_environment(markers):
    """PIDs whose environment holds any of `markers` (b"NAME=VALUE")."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                env = f.read().split(b"\0")
        except OSError:
            continue
        if markers.intersection(env):
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
    """Waits until nothing the job started is left, ranks and agents
    (job_processes); returns those left at the end."""
    deadline = time.monotonic() + timeout
    left = job_processes(job)
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = job_processes(job)
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
    for pid in job_processes(job):
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
    with open("/proc/sys/kernel/random/boot_id") as f:
        this_boot = f.read().strip()
    for name in os.listdir(state_dir):
        try:
            with open(os.path.join(state_dir, name, "job.toml"), "rb") as f:
                record = tomllib.load(f)
        except (OSError, ValueError):
            continue
        pid = record.get("coordinator_pid", 0)
        if record.get("coordinator_boot", this_boot) != this_boot:
            continue  # another machine's (a test's namespace): its pid is not one here
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
        """dlaunch started with `args`, its stdout and stderr pipes unless
        kwargs name others (a file, to wait on a line with wait_for_text)."""
        kwargs.setdefault("stdout", subprocess.PIPE)
        kwargs.setdefault("stderr", subprocess.PIPE)
        p = subprocess.Popen([DLAUNCH] + list(args), text=True,
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


def runnable_seconds(pid):
    """Seconds the threads of a process ran or waited for a CPU to run on
    (/proc/<pid>/task/*/schedstat): a thread that spins counts the wall time
    however loaded the machine is, where cpu_seconds counts only the CPU it got;
    an idle one counts its few wake-ups."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                ran, waited = f.read().split()[:2]
        except (OSError, ValueError):
            continue  # a thread that just ended
        total += int(ran) + int(waited)
    return total / 1e9


def wait_for(predicate, timeout=30.0, interval=0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    return predicate()


def wait_for_text(path, needle, timeout=60.0):
    """Waits until the file at `path` (a process's output, written while it
    runs) holds `needle`; returns the file's text then, or None when it did not
    within `timeout`. The text is the event a test waits for; the timeout only
    ends a wait that would otherwise hang."""
    def text():
        try:
            with open(path, errors="replace") as f:
                content = f.read()
        except OSError:
            return None
        return content if needle in content else None
    return wait_for(text, timeout, 0.05)


def open_output(test, name):
    """A file <test.tmp>/<name> to give a process as its stdout or stderr,
    closed at the test's end; wait_for_text reads it while the process runs."""
    f = open(os.path.join(test.tmp, name), "w")
    test.addCleanup(f.close)
    return f


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


# Skips. Each says what is missing, beginning with one of these words, so that
# scripts/test.sh's table (scripts/skips.sh) can tell which a machine may lack:
#   "no GPU:", "not root:", "no network namespaces:", "no mounts:", "no ptrace:"
#       what the machine or the kernel withholds (allowed by scripts/skips.sh);
#   "missing:", "not built:", anything else: what the README's set-up
#       (scripts/install-deps.sh, scripts/test.sh's builds) provides, so a CI
#       run that meets one fails.
# Where $DLAUNCH_SKIP_LOG names a file, each skip appends a line to it:
# phase, test file, test (or "-" for the whole file) and reason, tab-separated.
SKIP_LOG_ENV = "DLAUNCH_SKIP_LOG"


def _test_file():
    main_file = getattr(sys.modules.get("__main__"), "__file__", None) or sys.argv[0]
    return os.path.basename(main_file) if main_file else "?"


def record_skip(reason, test="-"):
    """Appends a skip to $DLAUNCH_SKIP_LOG (when set); one write of one line,
    so that test files running side by side do not tear each other's lines."""
    path = os.environ.get(SKIP_LOG_ENV)
    if not path:
        return
    phase = os.environ.get("DLAUNCH_SKIP_PHASE") or os.environ.get("DLAUNCH_SANITIZE") or "normal"
    fields = [phase, _test_file(), test, reason or "(no reason given)"]
    line = "\t".join(" ".join(str(f).split()) for f in fields) + "\n"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


def skip_file(reason):
    """Ends the whole test file as skipped (exit 77), saying and recording why."""
    print(f"SKIP: {reason}", flush=True)
    record_skip(reason)
    sys.exit(SKIP)


def skip_part(test, reason):
    """Records that a check inside `test` (a TestCase) was left out, while the
    rest of the test runs on."""
    print(f"\n{test.id()}: part skipped: {reason}", flush=True)
    record_skip(reason, _test_name(test))


def _test_name(test):
    # A test's id, or the "setUpClass (__main__.Class)" of a class-level skip.
    return test.id().replace("__main__.", "")


class _SkipRecordingResult(unittest.TextTestResult):
    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        record_skip(reason, _test_name(test))


class _SkipRecordingRunner(unittest.TextTestRunner):
    resultclass = _SkipRecordingResult


def main(**kwargs):
    """unittest.main for the test files: records every skip, of a test or of a
    class (SkipTest in setUpClass), and exits 77 (ctest's skip) when no test
    of the file ran to a result of its own."""
    program = unittest.main(testRunner=_SkipRecordingRunner, exit=False, **kwargs)
    result = program.result
    if not result.wasSuccessful():
        sys.exit(1)
    # A class skipped in setUpClass runs none of its tests: they are not in testsRun.
    test_skips = sum(1 for test, _ in result.skipped if isinstance(test, unittest.TestCase))
    if result.skipped and result.testsRun == test_skips:
        print(f"SKIP: every test of {_test_file()} skipped", flush=True)
        sys.exit(SKIP)
    sys.exit(0)


def netns_reason(honour_opt_out=True):
    """Why this process cannot make network namespaces, or None when it can:
    root, `ip`, `ip netns add` working, and (with `honour_opt_out`)
    DLAUNCH_TEST_NO_NETNS unset."""
    if os.geteuid() != 0:
        return "not root: network namespaces need root"
    if shutil.which("ip") is None:
        return "missing: ip (iproute2)"
    if honour_opt_out and os.environ.get("DLAUNCH_TEST_NO_NETNS"):
        return "DLAUNCH_TEST_NO_NETNS is set: network namespaces turned off by hand"
    name = f"dlreason{os.getpid()}"
    r = subprocess.run(["ip", "netns", "add", name], capture_output=True, text=True)
    if r.returncode != 0:
        return f"no network namespaces: `ip netns add` failed: {r.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", name], capture_output=True)
    return None


def firewall_reason(ns):
    """Why neither nft nor iptables can filter inside network namespace `ns`
    (sshd_harness's firewall_ssh and block_connections_to use them there)."""
    have = [t for t in ("nft", "iptables") if shutil.which(t)]
    if not have:
        return "missing: nft and iptables (nftables, iptables)"
    in_ns = ["ip", "netns", "exec", ns]
    errors = []
    if "nft" in have:
        rules = ("table inet dlaunch_probe {\n chain input {\n"
                 "  type filter hook input priority 0; policy accept;\n"
                 "  tcp dport 9 reject with tcp reset\n }\n}\n")
        r = subprocess.run(in_ns + ["nft", "-f", "-"], input=rules, capture_output=True,
                           text=True)
        subprocess.run(in_ns + ["nft", "delete", "table", "inet", "dlaunch_probe"],
                       capture_output=True)
        errors.append(f"nft: {r.stderr.strip() or 'exit %d' % r.returncode}")
    if "iptables" in have:
        rule = ["INPUT", "-p", "tcp", "--dport", "9", "-j", "REJECT", "--reject-with", "tcp-reset"]
        r = subprocess.run(in_ns + ["iptables", "-A"] + rule, capture_output=True, text=True)
        subprocess.run(in_ns + ["iptables", "-D"] + rule, capture_output=True)
        errors.append(f"iptables: {r.stderr.strip() or 'exit %d' % r.returncode}")
    return "firewall: neither works in a network namespace: " + "; ".join(errors)


def open_files_reason(needed, what):
    """Raises this process's open-file limit (soft and hard) to `needed` where
    it is lower; returns why not when it cannot (None when it could)."""
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft >= needed:
        return None
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(needed, soft), max(needed, hard)))
        return None
    except (OSError, ValueError) as e:
        if os.geteuid() != 0 and hard < needed:
            return (f"not root: {what} needs {needed} open files; the hard limit is {hard} "
                    "and only root may raise it")
        return f"open-file limit: {what} needs {needed}; raising it from {soft}/{hard} failed: {e}"
