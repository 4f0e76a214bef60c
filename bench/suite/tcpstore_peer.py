#!/usr/bin/python3
"""The TCPStore peer of rendezvous-scale: torch.distributed.TCPStore (Debian's
python3-torch, torch 1.13) doing what a rendezvous does for N agents. One
server process holds the store (`TCPStore("127.0.0.1", 0, N + 1, True,
timeout, wait_for_workers=False)`); N clients, each a TCPStore object of its
own (`TCPStore("127.0.0.1", port, N + 1, False, timeout,
wait_for_workers=False)`), `add` 1 to a counter, the one whose add makes it N
`set`s a key, and every client `wait`s on that key: all join, all learn that
they are complete (torch elastic's store barrier has this shape).

    /usr/bin/python3 bench/suite/tcpstore_peer.py --clients 1000 --out result.json

The clients live in a few processes (at most PER_PROCESS each, at least 2),
each with THREADS threads; a thread connects and adds for its share of the
clients one after the other, then waits on each of them. The server and the
client processes start and import torch first; then every client process is
told to go at the same moment, and the time measured runs from that moment
to the last client's wait returning (Python's and torch's start-up are not in
it). Every process raises its descriptor limit to the hard limit.

It writes one JSON object to --out (and stdout): "seconds", the server's CPU
seconds (every thread, from the store's start to the end of the barrier) and
peak RSS, the clients' CPU seconds, and "error" when the store did not get
that far: the server's death, a client's exception, or the time running out,
with how many clients had connected and added by then. It exits 0 either way;
every process it started is gone when it returns."""

import argparse
import datetime
import json
import os
import resource
import selectors
import signal
import subprocess
import sys
import tempfile
import threading
import time

PYTHON = "/usr/bin/python3"   # Debian's, with python3-torch
HOST = "127.0.0.1"
COUNTER, KEY = "joined", "complete"
PER_PROCESS = 2500   # clients per process: 4 descriptors each (2 sockets, a pipe)
THREADS = 32         # threads per client process
PROGRESS_S = 0.5     # how often a client process reports its counts
STATS_S = 10         # for the server's figures after the barrier; a stuck server gives none
STALL_S = 15         # no client connected, added or got through the wait for this long: given up
STOP_WAIT_S = 30     # how long a killed role may take to end before the run goes on without it


def raise_nofile():
    """Soft descriptor limit up to the hard one; returns the hard one."""
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return hard


def cpu_s():
    r = resource.getrusage(resource.RUSAGE_SELF)   # every thread of the process
    return r.ru_utime + r.ru_stime


def status_kib(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def emit(obj, lock=None):
    line = json.dumps(obj) + "\n"
    if lock:
        with lock:
            sys.stdout.write(line)
            sys.stdout.flush()
    else:
        sys.stdout.write(line)
        sys.stdout.flush()


def short(e):
    text = f"{type(e).__name__}: {e}".strip()
    return text.splitlines()[0][:300] if text else type(e).__name__


# ---- the server process ----------------------------------------------------

def serve(args):
    hard = raise_nofile()
    import torch.distributed as dist
    timeout = datetime.timedelta(seconds=args.timeout)
    store = dist.TCPStore(HOST, 0, args.clients + 1, True, timeout, wait_for_workers=False)
    cpu0 = cpu_s()
    emit({"port": store.port, "nofile": hard, "rss_kib": status_kib("VmRSS")})
    for line in sys.stdin:
        if line.strip() != "stats":
            break
        joined = None
        try:
            joined = int(store.add(COUNTER, 0))
        except Exception:  # the store's own client may be what failed
            pass
        emit({"cpu_s": cpu_s() - cpu0, "hwm_kib": status_kib("VmHWM"), "joined": joined,
              "fds": len(os.listdir("/proc/self/fd"))})
    os._exit(0)   # no destructor waits on connections the driver is about to drop


# ---- a client process ------------------------------------------------------

def clients(args):
    hard = raise_nofile()
    import torch.distributed as dist
    timeout = datetime.timedelta(seconds=args.timeout)
    lock = threading.Lock()
    counts = {"connected": 0, "joined": 0, "waited": 0}
    stores = []   # every client stays connected until the process ends
    emit({"ready": True, "nofile": hard})
    if sys.stdin.readline().strip() != "go":
        os._exit(0)
    cpu0 = cpu_s()
    finished = threading.Event()

    def note(stage, e):
        emit({"error": f"{stage}: {short(e)}", **counts}, lock)

    def worker(share):
        mine = []
        for _ in range(share):
            try:
                s = dist.TCPStore(HOST, args.port, args.total + 1, False, timeout,
                                  wait_for_workers=False)
            except Exception as e:
                note("connect", e)
                return
            mine.append(s)
            with lock:
                counts["connected"] += 1
            try:
                if s.add(COUNTER, 1) == args.total:
                    s.set(KEY, "1")
            except Exception as e:
                note("add", e)
                return
            with lock:
                counts["joined"] += 1
        with lock:
            stores.extend(mine)
        for s in mine:
            try:
                s.wait([KEY])
            except Exception as e:
                note("wait", e)
                return
            with lock:
                counts["waited"] += 1

    def progress():
        while not finished.wait(PROGRESS_S):
            with lock:
                emit({"progress": True, **counts})

    n = min(THREADS, args.count)
    shares = [args.count // n + (1 if i < args.count % n else 0) for i in range(n)]
    threads = [threading.Thread(target=worker, args=(s,), daemon=True) for s in shares]
    reporter = threading.Thread(target=progress, daemon=True)
    reporter.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    done_at = time.monotonic()
    finished.set()
    with lock:
        emit({"done_at": done_at, "cpu_s": cpu_s() - cpu0, **counts})
    sys.stdin.readline()   # the driver ends this process once the server's figures are read
    os._exit(0)


# ---- the driver ------------------------------------------------------------

class Child:
    """A role of this script in the driver's process group (a signal to the
    group reaches it too), its stdout read as JSON lines without blocking, its
    stderr in a file."""

    def __init__(self, tmp, name, argv):
        self.name = name
        self.err_path = os.path.join(tmp, name + ".stderr")
        with open(self.err_path, "wb") as err:
            self.proc = subprocess.Popen([PYTHON, os.path.abspath(__file__), *argv],
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=err)
        self.buf = b""
        self.last = {}

    def lines(self):
        """The whole JSON lines that have arrived (an empty list at EOF too)."""
        try:
            chunk = os.read(self.proc.stdout.fileno(), 65536)
        except BlockingIOError:
            return []
        self.buf += chunk
        *whole, self.buf = self.buf.split(b"\n")
        out = []
        for line in whole:
            try:
                out.append(json.loads(line))
            except ValueError:
                pass
        if out:
            self.last = out[-1]
        return out

    def send(self, text):
        try:
            self.proc.stdin.write(text.encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            pass

    def why_dead(self):
        """None while it runs; else its exit and the last lines of its stderr."""
        code = self.proc.poll()
        if code is None:
            return None
        how = f"killed by {signal.Signals(-code).name}" if code < 0 else f"exited {code}"
        try:
            with open(self.err_path, errors="replace") as f:
                lines = [l.strip() for l in f.read().splitlines() if l.strip()]
        except OSError:
            lines = []
        # An uncaught C++ exception says what it was on its `what():` line.
        what = [l.split("what():", 1)[1].strip() for l in lines if "what():" in l]
        last = (what or lines or [""])[-1][:300]
        return f"{self.name} {how}" + (f": {last}" if last else "")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        # A client process of thousands of threads was once seen alive minutes
        # after SIGKILL: the suite goes on without it rather than wait for it.
        try:
            self.proc.wait(timeout=STOP_WAIT_S)
        except subprocess.TimeoutExpired:
            print(f"tcpstore_peer: {self.name} (pid {self.proc.pid}) has not ended "
                  f"{STOP_WAIT_S} s after SIGKILL; going on without it", file=sys.stderr)
        for f in (self.proc.stdin, self.proc.stdout):
            try:
                f.close()
            except OSError:
                pass


def wait_lines(children, until, deadline, on_line, stalled=lambda: None):
    """Reads every child's lines until `until()` is true (returns None) or a
    child dies (returns why) or the deadline passes (returns "timeout") or
    `stalled()` says why it will not get there (returns that)."""
    sel = selectors.DefaultSelector()
    for c in children:
        os.set_blocking(c.proc.stdout.fileno(), False)
        sel.register(c.proc.stdout, selectors.EVENT_READ, c)
    try:
        while not until():
            for c in children:
                dead = c.why_dead()
                if dead:
                    for line in c.lines():   # what it said before it went
                        on_line(c, line)
                    if until():
                        return None
                    return dead
            left = deadline - time.monotonic()
            if left <= 0:
                return "timeout"
            stuck = stalled()
            if stuck:
                return stuck
            for key, _ in sel.select(min(left, 0.1)):
                for line in key.data.lines():
                    on_line(key.data, line)
        return None
    finally:
        sel.close()


def drive(args):
    hard = raise_nofile()
    n = args.clients
    procs = max(2, -(-n // PER_PROCESS))
    counts = [n // procs + (1 if i < n % procs else 0) for i in range(procs)]
    result = {"clients": n, "processes": procs, "threads_per_process": THREADS,
              "nofile_hard": hard, "timeout_s": args.timeout, "seconds": None, "error": None}
    tmp = tempfile.mkdtemp(prefix="dlaunch-tcpstore-")
    children = []
    try:
        server = Child(tmp, "server", ["--role", "server", "--clients", str(n),
                                       "--timeout", str(args.timeout)])
        children.append(server)
        up = {}
        why = wait_lines([server], lambda: "port" in up, time.monotonic() + args.start_timeout,
                         lambda c, line: up.update(line))
        if why:
            result["error"] = f"the server did not start: {why}"
            return result
        result["server_rss_before_kib"] = up["rss_kib"]
        workers = [Child(tmp, f"clients-{i}", [
            "--role", "clients", "--port", str(up["port"]), "--count", str(k),
            "--total", str(n), "--timeout", str(args.timeout)]) for i, k in enumerate(counts)]
        children += workers
        ready, done, errors = set(), {}, []
        # The server too: one that dies while the clients import torch is
        # noticed now, not after --start-timeout.
        why = wait_lines([server] + workers, lambda: len(ready) == procs,
                         time.monotonic() + args.start_timeout,
                         lambda c, line: ready.add(c.name) if line.get("ready") else None)
        if why:
            result["error"] = f"the clients did not start: {why}"
            return result

        def on_line(c, line):
            if "done_at" in line:
                done[c.name] = line
            elif "error" in line:
                errors.append(line["error"])

        start = time.monotonic()
        for w in workers:
            w.send("go\n")
        # A server stuck out of descriptors answers nothing while thousands of
        # client threads retry (a load average in the thousands): the barrier
        # is given up once the clients' counts stop moving.
        moved = {"counts": None, "at": start}

        def stalled():
            now = time.monotonic()
            counts = tuple(sum((done.get(w.name) or w.last).get(k, 0) for w in workers)
                           for k in ("connected", "joined", "waited"))
            if counts != moved["counts"]:
                moved.update(counts=counts, at=now)
            elif now - moved["at"] > STALL_S:
                return "stalled"
            return None

        why = wait_lines([server] + workers, lambda: len(done) == procs or errors,
                         start + args.timeout + 15, on_line, stalled)
        progress = [done.get(w.name) or w.last for w in workers]
        for k in ("connected", "joined", "waited"):
            result[k] = sum(p.get(k, 0) for p in progress)
        at = (f"by the last reports {result['connected']:,} of {n:,} clients connected, "
              f"{result['joined']:,} added, {result['waited']:,} through the wait")
        failed = bool(errors or why)
        if failed:
            result["elapsed_s"] = time.monotonic() - start
            # Clients left waiting on a dead or stuck server retry in a loop
            # (about half a core each): they go before anything else is asked.
            for w in workers:
                w.stop()
            # A client's reset is often the server going: give its death a moment to show.
            settle = time.monotonic() + 1.0
            while server.why_dead() is None and time.monotonic() < settle:
                time.sleep(0.05)
        else:
            result["seconds"] = max(d["done_at"] for d in done.values()) - start
            result["clients_cpu_s"] = sum(d["cpu_s"] for d in done.values())
        stats = {}
        if server.why_dead() is None:
            server.send("stats\n")
            wait_lines([server], lambda: "cpu_s" in stats, time.monotonic() + STATS_S,
                       lambda c, line: stats.update(line))
        if stats:
            result.update(server_cpu_s=stats["cpu_s"], server_hwm_kib=stats["hwm_kib"],
                          server_fds=stats["fds"], server_joined=stats["joined"])
        if failed:
            reasons = [server.why_dead()] if server.why_dead() else []
            if errors:
                reasons.append(f"{'first client error' if reasons else 'a client'}: {errors[0]}")
            elif why == "timeout":
                reasons.append(f"no barrier within {args.timeout + 15:.0f} s")
            elif why == "stalled":
                reasons.append(f"no client got further for {STALL_S} s")
            elif why not in reasons:
                reasons.append(why)
            if any("Too many open files" in r for r in reasons):
                reasons.append(f"every process here may open {hard:,} files (the hard limit)")
            result["error"] = "; ".join(reasons + [at])
        return result
    finally:
        for c in reversed(children):
            c.stop()
        for name in os.listdir(tmp):
            os.unlink(os.path.join(tmp, name))
        os.rmdir(tmp)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clients", type=int, help="clients (agents) in the barrier")
    ap.add_argument("--out", help="write the JSON result here too")
    ap.add_argument("--timeout", type=float, default=60.0,
                    help="the store's timeout (connect, wait), seconds; the barrier gets 15 more")
    ap.add_argument("--start-timeout", type=float, default=300.0,
                    help="seconds for the server and the client processes to import torch")
    ap.add_argument("--role", choices=("driver", "server", "clients"), default="driver",
                    help=argparse.SUPPRESS)
    ap.add_argument("--port", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--count", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--total", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.role == "server":
        return serve(args)
    if args.role == "clients":
        return clients(args)
    if not args.clients or args.clients < 1:
        ap.error("--clients N (N >= 1) is required")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))   # so that `finally` stops the rest
    result = drive(args)
    text = json.dumps(result, indent=1)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    print(text, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
