"""Runs one of the older bench scripts and reads back the markdown table it
prints (or writes), as {header: [row dicts]}: the scenarios that wrap them
keep those scripts' own measuring and only regroup their numbers."""

import subprocess
import sys

import cleanup


def run(argv, env, timeout, log):
    """The script's stdout; its lines are logged as they come, so a long run shows progress."""
    proc = subprocess.Popen([sys.executable, *argv], env=cleanup.marked_env(env),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True, cwd=cleanup.ROOT)
    out = []
    try:
        for line in proc.stdout:
            out.append(line)
            log("  > " + line.rstrip())
        proc.wait(timeout)
    finally:
        cleanup.stop(proc)
        proc.stdout.close()
    if proc.returncode != 0:
        raise RuntimeError(f"{argv[0]} exited {proc.returncode}: {''.join(out)[-600:]}")
    return "".join(out)


def table(text):
    """The rows of the first markdown table in `text`, as dicts by column name."""
    rows, header = [], None
    for line in text.splitlines():
        if not line.startswith("|"):
            if header and rows:
                break
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if header is None:
            header = cells
        elif not all(set(c) <= set("-: ") for c in cells):
            rows.append(dict(zip(header, cells)))
    return rows


def number(cell):
    return float(cell.replace(",", ""))
