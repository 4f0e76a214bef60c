"""one-node: 8 ranks of /bin/true on this machine, launched by dlaunch, by
torchrun and by Open MPI's mpirun. It replaced bench/core/launch_overhead.py
(dlaunch against mpirun, with the coordinator's peak RSS)."""

import os
import shutil

import measure
import plot
import report

NAME = "one-node"
GOAL = "dlaunch 10x faster than torchrun, and faster than mpirun"


def peers(ctx, ranks=8):
    env = dict(os.environ, DLAUNCH_STATE_DIR=os.path.join(ctx.tmp, "state"))
    found = [measure.Peer("dlaunch", [os.path.join(ctx.bin_dir, "dlaunch"), "--nproc-per-node",
                                      str(ranks), "--", "/bin/true"], env)]
    if os.path.exists("/usr/bin/torchrun"):
        # torch 1.13 (Debian 12) on Python 3.11 cannot parse its own default
        # `--redirects 0`/`--tee 0` (IntFlag no longer iterates NONE): a mapping for
        # local rank 9, which does not exist with 8 ranks, means "no redirects" too.
        found.append(measure.Peer("torchrun", [
            "/usr/bin/torchrun", "--standalone", "--nproc_per_node", str(ranks),
            "--redirects", "9:1", "--tee", "9:1", "--no_python", "/bin/true"], env))
    if shutil.which("mpirun"):
        root = ["--allow-run-as-root"] if os.geteuid() == 0 else []
        # A local-only launch needs no rsh agent: `false` keeps mpirun from looking for ssh.
        found.append(measure.Peer("mpirun", ["mpirun", *root, "-np", str(ranks), "--oversubscribe",
                                             "/bin/true"],
                                  dict(env, OMPI_MCA_plm_rsh_agent="false")))
    return found


def run(ctx):
    ps = peers(ctx)
    ctx.log(f"{NAME}: {', '.join(p.name for p in ps)}")
    stats, failures = measure.interleave(ps, ctx.runs, ctx.warmup, log=ctx.log)
    rows = report.timing_rows(stats, "dlaunch")
    for row, s in zip(rows, stats.values()):
        row += [report.ms(s.cpu_median), f"{s.maxrss_mib:.1f}"]
    table = report.Table(report.TIMING_HEADER + ["÷ dlaunch median", "CPU ms (median)",
                                                 "peak RSS MiB"], rows)
    result = report.Result(
        NAME, "8 ranks of /bin/true on this machine",
        "`dlaunch --nproc-per-node 8 -- /bin/true` against `torchrun --standalone "
        "--nproc_per_node 8 --no_python /bin/true` (Debian's /usr/bin/torchrun) and "
        "`mpirun -np 8 --oversubscribe /bin/true`. *÷ dlaunch median*: the peer's median "
        "over dlaunch's (above 1: dlaunch is faster). *CPU ms*: user+sys of the launcher "
        "and every child it reaped (agents, ranks, torchrun's worker processes). *peak RSS*: "
        "the largest of those processes' peak RSS, over all runs.",
        GOAL, tables=[table])
    d, t, m = (stats.get(k) for k in ("dlaunch", "torchrun", "mpirun"))
    if d and t and m:
        result.met = t.median >= 10 * d.median and d.median < m.median
        result.verdict = (f"torchrun/dlaunch {t.median / d.median:.1f}x (goal ≥ 10x), "
                          f"mpirun/dlaunch {m.median / d.median:.2f}x (goal > 1x)")
    else:
        result.verdict = "a peer is missing or failed"
    result.notes += report.failure_notes(failures)
    result.notes.append("torchrun runs with `--redirects 9:1 --tee 9:1`: torch 1.13 on "
                        "Python 3.11 cannot parse its default `0`; a mapping for a local rank "
                        "that does not exist redirects nothing, as the default does. Its "
                        "monitor loop polls the workers every `--monitor_interval` (default "
                        "5 s), which is most of its time here.")
    png = os.path.join(ctx.plots_dir, "one-node.png")
    plot.bars(png, "8 ranks of /bin/true on one machine (median, min-max)", "ms (log scale)",
              [(k, s.median * 1000, s.min * 1000, s.max * 1000) for k, s in stats.items()],
              logy=True)
    result.plots.append(("one-node: launch time per launcher", png))
    return result
