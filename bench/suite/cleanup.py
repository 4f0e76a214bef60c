"""Everything the suite starts is stopped again, also on Ctrl-C, SIGTERM or an
error: every command runs in a session of its own (so that a signal to the
suite does not reach it half-way, and its whole process group can be ended),
carries a marker in its environment (so that a sweep finds what escaped its
group, e.g. a rank that called setsid), and SIGINT/SIGTERM/SIGHUP become an
exception, so that every `with` and `finally` on the way out runs."""

import os
import signal
import sys
import time

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
import harness  # noqa: E402

MARKER = f"DLAUNCH_BENCH_SUITE={os.getpid()}"


class Interrupted(BaseException):
    """A signal asked the suite to stop; BaseException, so no `except Exception` eats it."""


def _raise(signum, _frame):
    # The first signal starts the clean-up; a second Ctrl-C must not cut it short.
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    raise Interrupted(signal.Signals(signum).name)


def install_signal_handlers():
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _raise)


def marked_env(env):
    key, value = MARKER.split("=", 1)
    return dict(env, **{key: value})


def kill_group(pgid):
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:
        pass


def stop(proc, grace=5.0):
    """SIGTERM to the process group first, so that a launcher can stop its own
    ranks and remote agents the way it does for a user's Ctrl-C; SIGKILL to the
    group after `grace` seconds (harness.kill_process_groups also reaps it)."""
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except OSError:
        pass
    deadline = time.monotonic() + grace
    while proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    harness.kill_process_groups([proc])


def sweep():
    """SIGKILLs every process that still carries this suite's marker; returns their pids."""
    marker = MARKER.encode()
    left = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                if marker not in f.read().split(b"\0"):
                    continue
            os.kill(int(entry), signal.SIGKILL)
            left.append(int(entry))
        except OSError:
            pass
    return left
