"""Scenario results and RESULTS.md. A scenario hands back a Result (tables,
plots, goal); this module alone knows markdown, so every scenario's section
reads the same."""

import os
import time
from dataclasses import dataclass, field


@dataclass
class Table:
    header: list
    rows: list
    caption: str = ""


@dataclass
class Result:
    name: str
    title: str
    what: str                       # what runs, in a sentence or two
    goal: str
    met: object = None              # True, False, or None: not judged (a peer missing)
    verdict: str = ""               # why met or not, with the numbers
    tables: list = field(default_factory=list)
    plots: list = field(default_factory=list)    # (caption, path)
    notes: list = field(default_factory=list)


def ms(seconds):
    return f"{seconds * 1000:.1f}"


def failure_notes(failures):
    """One note per peer that failed, with the first line of why (measure.interleave's failures)."""
    return [f"{k} failed and is left out: `{v.splitlines()[0]}`" for k, v in failures.items()]


def timing_rows(stats, reference, label=()):
    """One row per peer: median, min, max (ms), and its median over the
    reference's (above 1: the reference is faster). `label` prefixes each row."""
    ref = stats.get(reference)
    rows = []
    for name, s in stats.items():
        ratio = f"{s.median / ref.median:.2f}" if ref else "-"
        rows.append([*label, name, ms(s.median), ms(s.min), ms(s.max), str(len(s.samples)), ratio])
    return rows


TIMING_HEADER = ["peer", "median ms", "min ms", "max ms", "runs"]


def _table(t):
    out = [f"{t.caption}\n"] if t.caption else []
    out.append("| " + " | ".join(t.header) + " |")
    out.append("| " + " | ".join("---" if i == 0 else "---:" for i in range(len(t.header))) + " |")
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in t.rows]
    return "\n".join(out) + "\n"


def _verdict(r):
    return {True: "**met**", False: "**not met**", None: "**not judged**"}[r.met]


def _kept_sections(path, names):
    """From an earlier RESULTS.md at `path`: {name: (summary row, section text)}
    for each of `names` it holds. A section written before sections said which
    run made them gets its file's "Written by" line."""
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        text = f.read()
    written = next((line for line in text.splitlines() if line.startswith("Written by ")), "")
    provenance = written.split(". Peers run")[0].replace("Written by", "Run by", 1)
    kept = {}
    for name in names:
        anchor = f'<a id="{name}"></a>'
        start = text.find(anchor)
        row = next((line for line in text.splitlines() if line.startswith(f"| [{name}](#{name})")),
                   None)
        if start < 0 or row is None:
            continue
        end = text.find('<a id="', start + len(anchor))
        section = text[start:end if end >= 0 else len(text)].rstrip() + "\n"
        if "\nRun by `" not in section and provenance:
            head, _, rest = section.partition("\n\n")   # the anchor and the title
            section = f"{head}\n\n{provenance}.\n\n{rest}"
        kept[name] = (row, section)
    return kept


def write(path, results, machine, versions, command, runs, warmup, order=()):
    """RESULTS.md at `path`; plot links relative to its directory. `order`: every
    scenario's name in the suite's order; those not in `results` keep their
    summary row and section from the RESULTS.md already at `path`, if any, so
    that `--only X` brings X's figures up to date and leaves the rest."""
    base = os.path.dirname(os.path.abspath(path))
    now = time.strftime('%Y-%m-%d %H:%M %Z')
    ran = {r.name: r for r in results}
    kept = _kept_sections(path, [n for n in order if n not in ran])
    names = [n for n in order if n in ran or n in kept] or [r.name for r in results]
    lines = ["# dlaunch benchmark suite: results\n",
             f"Written by `{command}` on {now}. Peers run "
             f"interleaved (A B A B ...), {warmup} warm-up round{'s' if warmup != 1 else ''}, then {runs} measured "
             f"run{'s' if runs != 1 else ''} each; times are wall clock from spawn to reap.",
             ""]
    if kept:
        lines += [f"Kept from earlier runs, each section saying which: {', '.join(kept)}.", ""]
    lines += ["## Summary\n", "| scenario | goal | result |", "| --- | --- | --- |"]
    for n in names:
        r = ran.get(n)
        lines.append(f"| [{r.name}](#{r.name}) | {r.goal} | {_verdict(r)}: {r.verdict} |" if r
                     else kept[n][0])
    lines += ["", "## Machine\n"]
    lines += [f"- {k}: {v}" for k, v in machine.items()]
    lines += ["", "## Versions\n"]
    lines += [f"- {k}: `{v}`" for k, v in versions.items()]
    lines.append("")
    for n in names:
        r = ran.get(n)
        if not r:
            lines.append(kept[n][1])
            continue
        lines += [f'<a id="{r.name}"></a>', f"## {r.name}: {r.title}\n",
                  f"Run by `{command}` on {now}.\n", r.what + "\n",
                  f"Goal: {r.goal}. {_verdict(r)}: {r.verdict}\n"]
        for t in r.tables:
            lines.append(_table(t))
        for caption, plot in r.plots:
            lines.append(f"![{caption}]({os.path.relpath(plot, base)})\n")
        lines += [f"- {note}" for note in r.notes]
        lines.append("")
    os.makedirs(base, exist_ok=True)
    with open(path, "w") as f:
        f.write("\n".join(lines).rstrip() + "\n")
