#!/usr/bin/env python3
"""Soak of the coordinator's memory and CPU (issue 26 item 15): 8 ranks on 4
SSH hosts (2 each; real sshd in network namespaces, tests/integration/
sshd_harness.py, so run as root) each write --rate numbered lines a second,
paced by the clock, about 2% of them on stderr and every 1,000th one 100,000
bytes long, for --minutes. dlaunch's stdout goes to a file. Every 2 s the
coordinator's VmRSS and user+system CPU seconds and each agent process's are
sampled from /proc into a CSV.

    bench/output/soak.py --minutes 60 --warmup-minutes 10     # the hour
    bench/output/soak.py --minutes 2 --warmup-minutes 0.5     # a smoke run

At the end: dlaunch's exit code must be 0; every rank's log must hold exactly
the lines the rank says it wrote (numbered, each stream in order, each line of
the length written). Reports the coordinator's RSS at the end of warm-up and at
the end, the least-squares slope of its RSS in KiB/min over the samples after
warm-up and that of each minute's lowest sample (the floor under the sawtooth
of freed memory between two returns), RSS by 5 minutes, its peak RSS, and
CPU seconds per million lines of the coordinator and of each agent; prints the
markdown table and writes it, with the CSV's path, to --out. --terminal-stall S pipes dlaunch's stdout through a reader here that
stops reading for S seconds at --stall-at minutes. Everything runs at nice 10
(this machine has 2 cores and is shared) and every process started is ended
again, also on Ctrl-C or an error. Uses the binaries in --bin (copy them there:
the build dir changes under a long run)."""

import argparse
import csv
import os
import platform
import signal
import subprocess
import sys
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "tests", "integration"))
import sshd_harness  # noqa: E402
from harness import exe_name, parent_of  # noqa: E402

SAMPLE_S = 2.0  # many samples per heap return (30 s): a 10 s period aliased the sawtooth
BIG = 100_000  # bytes of every 1,000th line, "\n" included

# The rank: argv rate seconds line_bytes. Line i (from 0) goes to stderr when
# i % 50 == 25 (2%), is BIG bytes when i % 1000 == 999, else line_bytes; each
# starts "r<RANK> <o|e> <i, 10 digits> ". Paced by the clock in batches of
# about 10 ms. Last, one stdout line with the totals.
GENERATOR = r"""
import os, sys, time
rate, seconds, width, big = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
rank = os.environ.get("RANK", "x")
total = int(rate * seconds)
def write_all(fd, data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
def line(i, stream, size):
    head = b"r%s %s %010d " % (rank.encode(), stream, i)
    return head + b"." * (size - len(head) - 1) + b"\n"
counts = {1: 0, 2: 0}
nbytes = 0
start = time.monotonic()
i = 0
while i < total:
    due = min(total, int((time.monotonic() - start) * rate) + 1)
    if i >= due:
        time.sleep(0.01)
        continue
    out = []
    while i < due:
        fd = 2 if i % 50 == 25 else 1
        data = line(i, b"e" if fd == 2 else b"o", big if i % 1000 == 999 else width)
        if fd == 2:
            if out:
                write_all(1, b"".join(out)); out = []
            write_all(2, data)
        else:
            out.append(data)
        counts[fd] += 1
        nbytes += len(data)
        i += 1
    if out:
        write_all(1, b"".join(out))
write_all(1, b"SOAK-TOTAL rank=%s lines=%d stdout=%d stderr=%d bytes=%d seconds=%.1f\n"
          % (rank.encode(), total, counts[1], counts[2], nbytes, time.monotonic() - start))
"""


def read_proc(pid):
    """(VmRSS KiB, VmHWM KiB, utime+stime s) of a process, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            status = f.read()
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    kib = {}
    for row in status.splitlines():
        key, _, value = row.partition(":")
        if key in ("VmRSS", "VmHWM"):
            kib[key] = int(value.split()[0])
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return kib.get("VmRSS", 0), kib.get("VmHWM", 0), cpu


def agent_processes(ns):
    """{pid: "guardian" | "worker"} of the agent processes in a namespace: the
    uploaded agent runs as <cache>/agent-<sha>; its worker is the guardian's child."""
    r = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True, timeout=60)
    pids = [int(p) for p in r.stdout.split()]
    agents = {p for p in pids
              if exe_name(p).startswith("agent-") or exe_name(p).startswith("dlaunch-agent")}
    return {p: ("worker" if parent_of(p) in agents else "guardian") for p in agents}


def slope_per_min(points):
    """Least-squares slope of (seconds, value) points, in value per minute."""
    n = len(points)
    if n < 2:
        return float("nan")
    mt = sum(t for t, _ in points) / n
    mv = sum(v for _, v in points) / n
    den = sum((t - mt) ** 2 for t, _ in points)
    return 60.0 * sum((t - mt) * (v - mv) for t, v in points) / den if den else float("nan")


def minute_lows(points):
    """(seconds, value) points -> (minute's middle in seconds, lowest value) for
    each whole minute of samples."""
    lows = {}
    for t, v in points:
        m = int(t // 60)
        lows[m] = min(v, lows.get(m, v))
    return [(m * 60 + 30, v) for m, v in sorted(lows.items())]


def by_five_minutes(points, end_s):
    """[(first minute, last minute, values)] per 5 minutes of (seconds, value)
    points, up to end_s (a sample after the ranks' end is no span of its own)."""
    spans = {}
    for t, v in points:
        if t < end_s:
            spans.setdefault(int(t // 300), []).append(v)
    return [(k * 5, k * 5 + 5, v) for k, v in sorted(spans.items())]


class TerminalReader(threading.Thread):
    """Copies dlaunch's stdout from a pipe to a file, and stops reading for
    `stall_s` seconds once `stall_at_s` have passed since `t0`."""

    def __init__(self, fd, out_path, t0, stall_at_s, stall_s):
        super().__init__(daemon=True)
        self.fd, self.out_path = fd, out_path
        self.t0, self.stall_at_s, self.stall_s = t0, stall_at_s, stall_s
        self.stall_window = None  # (start s, end s) once it happened

    def run(self):
        with open(self.out_path, "wb") as out:
            while True:
                if self.stall_window is None and time.monotonic() - self.t0 >= self.stall_at_s:
                    start = time.monotonic() - self.t0
                    time.sleep(self.stall_s)
                    self.stall_window = (start, time.monotonic() - self.t0)
                try:
                    data = os.read(self.fd, 1 << 20)
                except OSError:
                    break
                if not data:
                    break
                out.write(data)


def verify_rank_log(path, width, big):
    """Reads a rank's log: (lines, bytes, totals dict from SOAK-TOTAL, problems)."""
    problems = []
    last = {b"o": -1, b"e": -1}
    lines = 0
    nbytes = 0
    totals = None
    with open(path, "rb", buffering=1 << 20) as f:
        for raw in f:
            lines += 1
            nbytes += len(raw)
            if raw.startswith(b"SOAK-TOTAL "):
                totals = dict(kv.split("=", 1) for kv in raw.decode().split()[1:])
                continue
            head = raw[:24].split(b" ")
            try:
                stream, i = head[1], int(head[2])
            except (IndexError, ValueError):
                problems.append(f"line {lines}: not a generator line: {raw[:40]!r}")
                continue
            if stream not in last or i <= last[stream]:
                problems.append(f"line {lines}: {stream!r} {i} after {last.get(stream)}")
            else:
                last[stream] = i
            want = big if i % 1000 == 999 else width
            if len(raw) != want:
                problems.append(f"line {lines}: number {i} is {len(raw)} bytes, wrote {want}")
            if len(problems) > 20:
                problems.append("(more not listed)")
                break
    return lines, nbytes, totals, problems


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--minutes", type=float, default=60.0, help="how long the ranks write")
    ap.add_argument("--rate", type=float, default=1500.0, help="lines a second per rank")
    ap.add_argument("--warmup-minutes", type=float, default=10.0,
                    help="samples before this are left out of the slope")
    ap.add_argument("--line-bytes", type=int, default=80, help="length of an ordinary line")
    ap.add_argument("--bin", default="/tmp/soak-bin", help="dir with dlaunch and dlaunch-agent")
    ap.add_argument("--out", default=os.path.join(REPO, "bench", "results", "soak.md"))
    ap.add_argument("--csv", default=None, help="default: <out dir>/soak-rss.csv")
    ap.add_argument("--terminal-stall", type=float, default=0.0,
                    help="seconds the reader of dlaunch's stdout stops reading (0: off)")
    ap.add_argument("--stall-at", type=float, default=None,
                    help="minute the stall starts (default: half the warm-up)")
    ap.add_argument("--no-verify", action="store_true",
                    help="count the rank logs' lines only, no per-line check")
    args = ap.parse_args()
    csv_path = args.csv or os.path.join(os.path.dirname(os.path.abspath(args.out)), "soak-rss.csv")
    os.makedirs(os.path.dirname(csv_path) or ".", exist_ok=True)
    stall_at = args.stall_at if args.stall_at is not None else args.warmup_minutes / 2

    if os.getpriority(os.PRIO_PROCESS, 0) < 10:
        os.setpriority(os.PRIO_PROCESS, 0, 10)  # inherited by sshd, agents, ranks, dlaunch
    dlaunch = os.path.join(args.bin, "dlaunch")
    agent = os.path.join(args.bin, "dlaunch-agent")
    for path in (dlaunch, agent):
        if not os.access(path, os.X_OK):
            raise SystemExit(f"{path} missing: copy build/bin/dlaunch and dlaunch-agent* there")
    sshd_harness.require_sshd()

    # SIGTERM (and SIGHUP) end the run like Ctrl-C: the finally blocks clean up.
    def interrupt(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")
    signal.signal(signal.SIGTERM, interrupt)
    signal.signal(signal.SIGHUP, interrupt)

    seconds = args.minutes * 60
    with sshd_harness.SshHosts(4) as hosts:
        if not hosts.netns:
            print("note: no network namespaces (not root?): sshd on loopback ports")
        hosts.write_known_hosts()
        hosts_file = hosts.hosts_file([2, 2, 2, 2])
        env = hosts.env(DLAUNCH_AGENT=agent)
        state = env["DLAUNCH_STATE_DIR"]
        name = f"soak-{os.getpid()}"
        job_dir = os.path.join(state, name)
        term_path = os.path.join(hosts.tmp, "terminal.out")
        err_path = os.path.join(hosts.tmp, "dlaunch.err")
        cmd = [dlaunch, "--hosts", hosts_file, "--name", name, "--",
               "/usr/bin/python3", "-c", GENERATOR, str(args.rate), str(seconds),
               str(args.line_bytes), str(BIG)]
        print(f"soak: {args.minutes:g} min, 8 ranks x {args.rate:g} lines/s, 4 hosts "
              f"({'netns' if hosts.netns else 'loopback'}), binaries in {args.bin}", flush=True)

        proc = None
        reader = None
        rows = []
        agent_names = {}  # pid -> "h1 worker"
        last_agent = {}   # label -> (rss, hwm, cpu) last seen
        rc = None
        t0 = time.monotonic()
        try:
            err = open(err_path, "wb")
            if args.terminal_stall > 0:
                proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, env=env)
                reader = TerminalReader(proc.stdout.fileno(), term_path, t0, stall_at * 60,
                                        args.terminal_stall)
                reader.start()
            else:
                with open(term_path, "wb") as term:
                    proc = subprocess.Popen(cmd, stdout=term, stderr=err, env=env)
            err.close()
            next_row = 0.0
            next_print = 0.0
            next_scan = 0.0
            with open(csv_path, "w", newline="") as csv_file:
                writer = None
                while True:
                    pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
                    now = time.monotonic() - t0
                    if pid:
                        rc = os.waitstatus_to_exitcode(status)
                        proc.returncode = rc
                        coord_final_cpu = usage.ru_utime + usage.ru_stime
                        coord_final_hwm = usage.ru_maxrss  # KiB on Linux
                        break
                    coord = read_proc(proc.pid)
                    if now >= next_scan:  # new agents: each second until all 8 are up
                        for h in hosts.hosts:
                            for apid, role in agent_processes(h["ns"]).items() if h["ns"] else []:
                                agent_names.setdefault(apid, f"{h['name']} {role}")
                        next_scan = now + (30.0 if len(agent_names) >= 8 else 1.0)
                    # known agents: every second, so that their last CPU reading is recent
                    for apid, label in agent_names.items():
                        got = read_proc(apid)
                        if got:
                            last_agent[label] = got
                    if now >= next_row and coord:
                        labels = sorted(last_agent)
                        row = {"time_s": round(now, 1), "coordinator_rss_kib": coord[0],
                               "coordinator_hwm_kib": coord[1],
                               "coordinator_cpu_s": round(coord[2], 2),
                               "rank_logs_mb": round(sum(
                                   os.path.getsize(os.path.join(job_dir, f"rank-{r}.log"))
                                   for r in range(8)
                                   if os.path.exists(os.path.join(job_dir, f"rank-{r}.log")))
                                   / 1e6, 1),
                               "loadavg_1m": round(os.getloadavg()[0], 2)}
                        for label in labels:
                            key = label.replace(" ", "_")
                            row[f"{key}_rss_kib"] = last_agent[label][0]
                            row[f"{key}_cpu_s"] = round(last_agent[label][2], 2)
                        if writer is None and len(labels) >= 8:
                            writer = csv.DictWriter(csv_file, fieldnames=list(row))
                            writer.writeheader()
                            for r in rows:  # earlier rows, before every agent was up
                                writer.writerow({k: r.get(k, "") for k in writer.fieldnames})
                        if writer is not None:
                            writer.writerow({k: row.get(k, "") for k in writer.fieldnames})
                            csv_file.flush()
                        rows.append(row)
                        next_row += SAMPLE_S
                        if now >= next_print:
                            print(f"  t={now / 60:5.1f} min  coordinator RSS "
                                  f"{coord[0] / 1024:6.1f} MiB  CPU {coord[2]:7.1f} s  agents "
                                  f"{len(last_agent)}", flush=True)
                            next_print += 300
                    time.sleep(1.0)
                if writer is None and rows:  # fewer than 8 agents ever seen
                    writer = csv.DictWriter(csv_file, fieldnames=sorted({k for r in rows for k in r}))
                    writer.writeheader()
                    for r in rows:
                        writer.writerow(r)
            wall = time.monotonic() - t0
            if reader:
                reader.join(timeout=60)
        finally:
            if proc and proc.poll() is None and rc is None:
                proc.send_signal(signal.SIGINT)  # dlaunch stops every rank and agent
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()

        with open(err_path, "rb") as f:
            err_text = f.read().decode(errors="replace")
        print(f"dlaunch exited {rc} after {wall:.0f} s", flush=True)
        if rc != 0:
            print(err_text[-3000:], file=sys.stderr)

        # -- the rank logs against what the ranks wrote ---------------------------
        ranks = []
        for rank in range(8):
            path = os.path.join(job_dir, f"rank-{rank}.log")
            if not os.path.exists(path):
                ranks.append({"rank": rank, "problems": [f"{path} missing"], "lines": 0,
                              "written": None})
                continue
            if args.no_verify:
                lines = nbytes = 0
                with open(path, "rb") as f:
                    while chunk := f.read(1 << 24):
                        lines += chunk.count(b"\n")
                        nbytes += len(chunk)
                    f.seek(max(0, nbytes - 4096))
                    tail = f.read().splitlines()
                totals = (dict(kv.split("=", 1) for kv in tail[-1].decode().split()[1:])
                          if tail and tail[-1].startswith(b"SOAK-TOTAL") else None)
                problems = []
            else:
                lines, nbytes, totals, problems = verify_rank_log(path, args.line_bytes, BIG)
            written = int(totals["lines"]) + 1 if totals else None  # + the totals line
            if totals is None:
                problems.append("no SOAK-TOTAL line")
            elif lines != written:
                problems.append(f"{lines} lines in the log, the rank wrote {written}")
            elif totals and nbytes != int(totals["bytes"]) + len(
                    f"SOAK-TOTAL rank={totals['rank']} lines={totals['lines']} "
                    f"stdout={totals['stdout']} stderr={totals['stderr']} bytes={totals['bytes']} "
                    f"seconds={totals['seconds']}\n"):
                problems.append(f"{nbytes} bytes in the log, the rank wrote a different number")
            ranks.append({"rank": rank, "lines": lines, "written": written, "problems": problems,
                          "totals": totals})
        others = sorted(n for n in os.listdir(job_dir) if n.startswith("rank-")
                        and n not in {f"rank-{r}.log" for r in range(8)}) \
            if os.path.isdir(job_dir) else []
        term_lines = 0
        with open(term_path, "rb") as f:
            while chunk := f.read(1 << 24):
                term_lines += chunk.count(b"\n")
        term_bytes = os.path.getsize(term_path)
        err_lines = err_text.count("\n")

    # -- report ----------------------------------------------------------------
    lines_written = sum(r["written"] or 0 for r in ranks)
    lines_logged = sum(r["lines"] for r in ranks)
    mlines = lines_written / 1e6 if lines_written else float("nan")
    warm_s = args.warmup_minutes * 60
    after = [(r["time_s"], r["coordinator_rss_kib"]) for r in rows if r["time_s"] >= warm_s]
    slope = slope_per_min(after)
    rss_warm = after[0][1] if after else None
    rss_end = rows[-1]["coordinator_rss_kib"] if rows else None
    peak_sampled = max((r["coordinator_rss_kib"] for r in rows), default=0)
    first_half = [p for p in after if p[0] < (warm_s + rows[-1]["time_s"]) / 2] if rows else []
    second_half = [p for p in after if p not in first_half]

    def kib(v):
        return "n/a" if v is None else f"{v:,} KiB ({v / 1024:.1f} MiB)"

    out = []
    out.append("| measure | value |")
    out.append("| --- | ---: |")
    out.append(f"| dlaunch exit code | {rc} |")
    out.append(f"| wall time | {wall:.0f} s |")
    out.append(f"| lines written by the ranks (incl. 1 totals line each) | {lines_written:,} |")
    out.append(f"| lines in the rank logs | {lines_logged:,} |")
    # The terminal: ranks' stdout on dlaunch's stdout, their stderr on its stderr; a
    # line longer than the agent's 64 KiB piece shows as 2 terminal lines there.
    big_lines = sum(int(r["totals"]["lines"]) // 1000 for r in ranks if r.get("totals"))
    out_expected = sum(int(r["totals"]["stdout"]) + 1 for r in ranks if r.get("totals")) + big_lines
    err_expected = sum(int(r["totals"]["stderr"]) for r in ranks if r.get("totals"))
    out.append(f"| lines in dlaunch's stdout file (expected: ranks' stdout lines + 1 per "
               f"100,000-byte line) | {term_lines:,} of {out_expected:,} "
               f"({term_bytes / 1e9:.2f} GB) |")
    out.append(f"| lines on dlaunch's stderr (ranks' stderr lines + dlaunch's own) | "
               f"{err_lines:,} ({err_expected:,} from ranks) |")
    out.append(f"| samples (every {SAMPLE_S:g} s) / after warm-up | {len(rows)} / {len(after)} |")
    out.append(f"| coordinator RSS at warm-up end ({args.warmup_minutes:g} min) | {kib(rss_warm)} |")
    out.append(f"| coordinator RSS at the last sample | {kib(rss_end)} |")
    out.append(f"| coordinator RSS slope after warm-up | {slope:+.2f} KiB/min |")
    out.append(f"| same, first / second half of the post-warm-up samples | "
               f"{slope_per_min(first_half):+.2f} / {slope_per_min(second_half):+.2f} KiB/min |")
    floor = minute_lows(after)
    out.append(f"| slope of each minute's lowest RSS after warm-up ({len(floor)} minutes) | "
               f"{slope_per_min(floor):+.2f} KiB/min |")
    out.append(f"| coordinator peak RSS (sampled / VmHWM at exit) | "
               f"{peak_sampled:,} / {coord_final_hwm:,} KiB |")
    out.append(f"| coordinator CPU | {coord_final_cpu:.1f} s = {coord_final_cpu / mlines:.2f} s "
               f"per million lines |")
    hosts_cpu = {}
    agent_rates = []
    for label, (rss, hwm, cpu) in sorted(last_agent.items()):
        hosts_cpu.setdefault(label.split()[0], []).append((label, rss, hwm, cpu))
    for host, procs in sorted(hosts_cpu.items()):
        cpu = sum(p[3] for p in procs)
        own = sum(r["written"] or 0 for r in ranks if r.get("totals")
                  and r["rank"] // 2 == int(host[1:]) - 1) / 1e6 or float("nan")
        detail = ", ".join(f"{p[0].split()[1]} {p[3]:.1f} s, peak RSS {p[2]:,} KiB"
                           for p in procs)
        out.append(f"| agent {host} CPU ({detail}) | {cpu:.1f} s = {cpu / own:.2f} s per million "
                   f"of its own ranks' lines, {cpu / mlines:.2f} per million of all |")
        agent_rates.append((cpu / own, cpu / mlines))
    coord_rate = coord_final_cpu / mlines
    cpu_verdict = (f"Coordinator CPU: {coord_rate:.2f} s per million lines "
                   f"({'lower than' if coord_rate < 8.6 else 'not lower than'} the issue's 8.6).")
    if agent_rates:
        cpu_verdict += (
            f" Agents: {min(a for a, _ in agent_rates):.2f} to {max(a for a, _ in agent_rates):.2f}"
            f" s per million of their own ranks' lines, {min(b for _, b in agent_rates):.2f} to "
            f"{max(b for _, b in agent_rates):.2f} per million of all lines (the issue's "
            f"\"about 6\" does not say which).")
    problems = [f"rank {r['rank']}: {p}" for r in ranks for p in r["problems"]]
    if others:
        problems.append(f"other rank files in the job dir: {others}")
    if reader and reader.stall_window:
        a, b = reader.stall_window
        out.append(f"| terminal stall | stdout not read from {a:.0f} s to {b:.0f} s |")
    skipped = [l for l in err_text.splitlines() if "skipped" in l or "fell behind" in l]
    steps = [f"{b['time_s'] / 60:.1f} min: {b['coordinator_rss_kib'] - a['coordinator_rss_kib']:+,} KiB"
             for a, b in zip(rows, rows[1:]) if b["time_s"] >= 60
             and abs(b["coordinator_rss_kib"] - a["coordinator_rss_kib"]) >= 256]
    out.append(f"| coordinator RSS changes of 256 KiB or more between samples after 1 min | "
               f"{'; '.join(steps) or 'none'} |")
    out.append("")
    out.append("| minutes | median RSS KiB | lowest | highest |")
    out.append("| --- | ---: | ---: | ---: |")
    for lo, hi, values in by_five_minutes(after, args.minutes * 60):
        values = sorted(values)
        out.append(f"| {lo}-{hi} | {values[len(values) // 2]:,} | {values[0]:,} | {values[-1]:,} |")
    table = "\n".join(out)
    verdict = (f"Coordinator RSS slope after warm-up: {slope:+.2f} KiB/min "
               f"({'under' if slope < 1 else 'NOT under'} 1 KiB/min).")
    print(table)
    print(verdict)
    print(cpu_verdict)
    for p in problems:
        print("PROBLEM:", p)
    for l in skipped:
        print("dlaunch:", l)

    with open(args.out, "w") as f:
        f.write("# Coordinator memory soak (issue 26 item 15)\n\n")
        f.write("```\n" + " ".join([os.path.relpath(sys.argv[0], REPO)] + sys.argv[1:]) + "\n```\n\n")
        commit = ""
        try:
            with open(os.path.join(args.bin, "COMMIT")) as c:
                commit = c.read().strip()
        except OSError:
            pass
        mem_kib = 0
        with open("/proc/meminfo") as m:
            for row in m:
                if row.startswith("MemTotal:"):
                    mem_kib = int(row.split()[1])
        f.write(f"Binaries: {args.bin} (copied from build/bin at commit {commit or 'unknown'}). "
                f"Machine: {os.cpu_count()} cores, {mem_kib / 1024 / 1024:.1f} GiB memory, "
                f"kernel {platform.release()}. 8 ranks on 4 SSH hosts (2 each, "
                f"{'network namespaces' if hosts.netns else 'loopback'}), {args.rate:g} lines/s "
                f"per rank for {args.minutes:g} min, ~2% on stderr, every 1,000th line {BIG:,} "
                f"bytes, others {args.line_bytes} bytes; dlaunch's stdout to a file; all at nice 10."
                f"\n\nSamples every {SAMPLE_S:g} s: `{os.path.relpath(csv_path, REPO)}`.\n\n")
        f.write(table + "\n\n" + verdict + "\n\n" + cpu_verdict + "\n")
        if problems:
            f.write("\nProblems:\n\n" + "\n".join(f"- {p}" for p in problems) + "\n")
        if skipped:
            f.write("\ndlaunch said:\n\n" + "\n".join(f"    {l}" for l in skipped) + "\n")
    print(f"wrote {args.out} and {csv_path}")
    return 0 if rc == 0 and not problems else 1


if __name__ == "__main__":
    sys.exit(main())
