"""Interleaved timing of peers and the statistics of the samples.

Peers run A B A B ..., one warm-up round first (page cache, the agent upload,
Python's bytecode caches), so that a neighbour's load or a CPU frequency change
lands on all of them alike rather than on whichever ran last."""

import os
import statistics
import subprocess
import threading
import time
from dataclasses import dataclass, field

import cleanup


class RunFailed(Exception):
    pass


@dataclass
class Peer:
    name: str
    argv: list
    env: dict
    before: object = None   # called before every run (e.g. empties a cache); not timed
    stdout: object = subprocess.DEVNULL
    # Called after every run that exited 0, with its Sample (e.g. reads a figure the
    # command printed into sample.figures); not timed. It may raise RunFailed.
    after: object = None


@dataclass
class Sample:
    wall_s: float
    cpu_s: float   # user+sys of the process and the children it reaped (os.wait4's rusage)
    maxrss_kib: int = 0   # the largest peak RSS among that process and those children
    figures: dict = field(default_factory=dict)   # what Peer.after read from the run


@dataclass
class Stats:
    samples: list = field(default_factory=list)

    def wall(self):
        return [s.wall_s for s in self.samples]

    def cpu(self):
        return [s.cpu_s for s in self.samples]

    @property
    def median(self):
        return statistics.median(self.wall())

    @property
    def min(self):
        return min(self.wall())

    @property
    def max(self):
        return max(self.wall())

    @property
    def maxrss_mib(self):
        return max(s.maxrss_kib for s in self.samples) / 1024

    @property
    def cpu_median(self):
        return statistics.median(self.cpu())


def run_once(peer, timeout=300.0):
    """Runs one peer to its end; wall time from spawn to reap. os.wait4 rather than
    Popen.wait because only wait4 returns the rusage of this one child (with the
    descendants it reaped itself)."""
    if peer.before:
        peer.before()
    start = time.perf_counter()
    proc = subprocess.Popen(peer.argv, env=cleanup.marked_env(peer.env), stdout=peer.stdout,
                            stderr=subprocess.PIPE, start_new_session=True)
    # stderr is read on a thread: a chatty launcher must not block on a full pipe.
    err = []
    reader = threading.Thread(target=lambda: err.append(proc.stderr.read()), daemon=True)
    reader.start()
    # The timer only signals: reaping stays with wait4 here.
    timer = threading.Timer(timeout, cleanup.kill_group, (proc.pid,))
    timer.start()
    try:
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
    finally:
        timer.cancel()
        cleanup.stop(proc)   # only acts if it is still running (an interrupt mid-run)
        reader.join(5)
        proc.stderr.close()
    if proc.returncode != 0:
        tail = (err[0] if err else b"").decode(errors="replace")[-800:]
        raise RunFailed(f"{peer.name}: {' '.join(peer.argv[:4])}... exited {proc.returncode}:\n{tail}")
    sample = Sample(elapsed, usage.ru_utime + usage.ru_stime, usage.ru_maxrss)
    if peer.after:
        peer.after(sample)
    return sample


def interleave(peers, runs, warmup=1, timeout=300.0, log=print):
    """{peer name: Stats} after `warmup` unrecorded rounds and `runs` recorded ones,
    each round every peer once in turn. A peer that fails is dropped (its
    error in `failures`), the others go on."""
    stats = {p.name: Stats() for p in peers}
    failures = {}
    for round_ in range(warmup + runs):
        for p in peers:
            if p.name in failures:
                continue
            try:
                s = run_once(p, timeout)
            except RunFailed as e:
                failures[p.name] = str(e)
                log(f"  {p.name} failed, left out: {e}")
                continue
            if round_ >= warmup:
                stats[p.name].samples.append(s)
            log(f"  {'warm-up' if round_ < warmup else f'run {round_ - warmup + 1}'}: "
                f"{p.name} {s.wall_s * 1000:.1f} ms (CPU {s.cpu_s * 1000:.1f} ms)")
    return {k: v for k, v in stats.items() if v.samples}, failures



def exe_match(prefix, under=None, whole=False):
    """A test for PeakRss: an executable whose file name starts with `prefix`
    (is `prefix`, when `whole`), and lies under the directory `under` when given
    (e.g. this run's remote agent cache: not another job's agents on the machine)."""
    under = os.path.join(os.path.realpath(under), "") if under else None

    def match(path):
        name = os.path.basename(path)
        return (name == prefix if whole else name.startswith(prefix)) \
            and (under is None or path.startswith(under))
    return match


class PeakRss:
    """The largest peak resident set (VmHWM, KiB) of the processes of each
    group: {label: a test of a process's executable path (exe_match)}, e.g. the
    agents a launcher starts on hosts that share this machine's /proc. A
    thread of its own scans /proc every `interval` seconds while the `with`
    block runs; take() hands back {label: (peak KiB, processes seen)} since the
    last take() and starts over, so that a peer's before and after hooks give
    each run its own figure. VmHWM is the process's own (not, as wait4's
    ru_maxrss is, floored by the RSS its parent had when it forked). A process
    that grows in its last `interval` before it exits is seen short of its
    peak: the figure is a lower bound."""

    def __init__(self, groups, interval=0.02):
        self.groups, self.interval = dict(groups), interval
        self._lock = threading.Lock()
        self._reset()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def _reset(self):
        self._peak = dict.fromkeys(self.groups, 0)
        self._seen = {label: set() for label in self.groups}

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(5)

    def take(self):
        with self._lock:
            found = {label: (self._peak[label], len(self._seen[label])) for label in self.groups}
            self._reset()
        return found

    def _poll(self):
        while not self._stop.wait(self.interval):
            for entry in os.listdir("/proc"):
                if not entry.isdigit():
                    continue
                try:
                    # Read every time: a process may exec the program under the pid it had.
                    exe = os.readlink(f"/proc/{entry}/exe")
                    labels = [label for label, match in self.groups.items() if match(exe)]
                    if not labels:
                        continue
                    with open(f"/proc/{entry}/status") as f:
                        hwm = next((int(line.split()[1]) for line in f
                                    if line.startswith("VmHWM:")), 0)
                except (OSError, ValueError):
                    continue
                with self._lock:
                    for label in labels:
                        self._peak[label] = max(self._peak[label], hwm)
                        self._seen[label].add(int(entry))


def watch_peaks(peer, watch, key="peak RSS"):
    """`peer`, its hooks wrapped so that each of its runs gets what `watch` (a
    running PeakRss) saw during it in sample.figures[key]."""
    before, after = peer.before, peer.after

    def start():
        if before:
            before()
        watch.take()

    def end(sample):
        sample.figures[key] = watch.take()
        if after:
            after(sample)
    peer.before, peer.after = start, end
    return peer


def peaks_kib(stats, label, key="peak RSS"):
    """Each run's peak of `label` (watch_peaks), for the runs that saw such a process."""
    return [s.figures[key][label][0] for s in stats.samples
            if key in s.figures and s.figures[key][label][1]]
