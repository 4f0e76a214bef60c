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
