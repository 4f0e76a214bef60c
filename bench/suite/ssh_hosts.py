"""ssh-hosts: 8 ranks of /bin/true on each of 1..64 SSH hosts, real sshd's from
the integration tests' harness (network namespaces with 198.18.x.x addresses
when root, loopback ports otherwise). Peers: dlaunch with the agent already
uploaded and with an empty remote cache, pdsh over ssh, mpirun over ssh, and
the floor: one bare `ssh host true` per host, all at once.
It replaced bench/ssh/compare_pdsh.py (8 hosts, dlaunch against pdsh and mpirun)."""

import os
import shutil
import statistics

import measure
import plot
import report
import sshd_harness  # found through cleanup's sys.path entry for tests/integration

NAME = "ssh-hosts"
GOAL = ("dlaunch (agent cached) faster than pdsh at every host count; coordinator CPU per added host "
        "under 5 ms; agent peak RSS under 8 MiB; coordinator under 64 MiB at 64 hosts")
CACHED, COLD, PDSH, MPI = "dlaunch, agent cached", "dlaunch, cold cache", "pdsh -R ssh", "mpirun --hostfile"
BARE = "bare ssh handshakes"
CPU_GOAL_MS = 5.0
EXTRAPOLATE_TO = 1000
AGENT, COORDINATOR = "agent", "coordinator"
AGENT_GOAL_MIB, COORDINATOR_GOAL_MIB, COORDINATOR_GOAL_HOSTS = 8, 64, 64


def rss_groups(ctx, hosts):
    """What measure.PeakRss watches in a dlaunch run: the agents uploaded into
    these hosts' remote cache (`agent-<sha256>`) and the coordinator (the
    `dlaunch` being measured), not another dlaunch job on this machine."""
    return {AGENT: measure.exe_match("agent-", under=hosts.remote_cache),
            COORDINATOR: measure.exe_match("dlaunch", under=ctx.bin_dir, whole=True)}


def ssh_config(hosts, path):
    """The harness's client settings (key, known_hosts, user) for OpenSSH's own
    client, which takes them from -F, not from $HOME: by host name (h1, ...), and
    by address too where every host has its own (netns), as mpirun names them."""
    known = os.path.join(hosts.home, ".ssh", "known_hosts")
    with open(path, "w") as f:
        for h in hosts.hosts:
            names = f"{h['name']} {h['address']}" if hosts.netns else h["name"]
            f.write(f"Host {names}\n  HostName {h['address']}\n  Port {h['port']}\n  User root\n"
                    f"  IdentityFile {hosts.client_key}\n  UserKnownHostsFile {known}\n"
                    f"  StrictHostKeyChecking yes\n  BatchMode yes\n")


def peers(ctx, hosts, n, ranks, cfg, watch=None):
    """`watch`: a running measure.PeakRss(rss_groups()) that dlaunch's runs report."""
    env = hosts.env()
    dlaunch = os.path.join(ctx.bin_dir, "dlaunch")
    hosts_file = hosts.hosts_file([ranks] * n, hosts=hosts.hosts[:n], name=f"hosts-{n}.toml")
    argv = [dlaunch, "--hosts", hosts_file, "--", "/bin/true"]
    found = [measure.Peer(CACHED, argv, env),
             measure.Peer(COLD, argv, env,
                          before=lambda: shutil.rmtree(hosts.remote_cache, ignore_errors=True))]
    if watch:
        for p in found:
            measure.watch_peaks(p, watch)
    # The floor every launcher here stands on: a key exchange, an authentication
    # and one command per host, all at once, with no connection sharing.
    found.append(measure.Peer(BARE, [
        "sh", "-c", 'for h; do ssh -F "$0" -o ControlMaster=no -o ControlPath=none "$h" true & done; '
        'wait', cfg, *(h["name"] for h in hosts.hosts[:n])], env))
    if shutil.which("pdsh"):
        names = ",".join(h["name"] for h in hosts.hosts[:n])
        found.append(measure.Peer(PDSH, ["pdsh", "-R", "ssh", "-w", names, "true"],
                                  dict(env, PDSH_SSH_ARGS=f"-F {cfg} -x %h",
                                       PDSH_SSH_ARGS_APPEND="")))
    # On loopback every host is 127.0.0.1: mpirun would take them all for this
    # machine and start no ssh at all, so it only runs against namespaces.
    if shutil.which("mpirun") and hosts.netns:
        hostfile = os.path.join(hosts.tmp, f"mpi-hosts-{n}")
        with open(hostfile, "w") as f:
            f.writelines(f"{h['address']} slots={ranks}\n" for h in hosts.hosts[:n])
        root = ["--allow-run-as-root"] if os.geteuid() == 0 else []
        found.append(measure.Peer(MPI, [
            "mpirun", *root, "--hostfile", hostfile, "-np", str(n * ranks),
            "--mca", "plm_rsh_agent", "ssh", "--mca", "plm_rsh_args", f"-F {cfg}", "/bin/true"],
            env))
    return found


def cpu_fit(total_ms):
    """Least squares of a launch's CPU ms against its host count: (fixed ms,
    ms per host). One count alone gives it all to the per-host part."""
    xs = sorted(total_ms)
    if len(xs) < 2:
        return 0.0, total_ms[xs[0]] / xs[0]
    mx = sum(xs) / len(xs)
    my = sum(total_ms[x] for x in xs) / len(xs)
    slope = (sum((x - mx) * (total_ms[x] - my) for x in xs)
             / sum((x - mx) ** 2 for x in xs))
    return my - slope * mx, slope


def extrapolation(by_count, n):
    """What each launcher's own CPU per host at `n` hosts says of a launch on
    EXTRAPOLATE_TO hosts, where every sshd has a machine of its own and the
    launcher's CPU is what is left on the one it runs on."""
    cores = os.cpu_count() or 1
    parts = []
    for name, s in by_count[n].items():
        per_host = s.cpu_median / n
        total = per_host * EXTRAPOLATE_TO
        parts.append(f"{name} {per_host * 1000:.1f} ms per host, so {total:.1f} CPU s for "
                     f"{EXTRAPOLATE_TO:,} hosts, at least {total / cores:.1f} s on {cores} cores")
    return (f"Extrapolation, not a measurement: from the launchers' CPU per host at {n} hosts, a "
            f"launch on {EXTRAPOLATE_TO:,} hosts (each sshd on its own machine) needs "
            + "; ".join(parts) + ". dlaunch's figure is its coordinator alone (libssh2 in "
            "process); the others include their ssh client processes.")


def memory_goals(by_count):
    """The verdict's items for the memory goals, and whether they hold (None:
    not judged, and none failed). The agent's holds at every host count; the
    coordinator's is judged at COORDINATOR_GOAL_HOSTS, and only reported when
    the largest count run is smaller (--quick)."""
    runs = {n: [s for k, s in stats.items() if k in (CACHED, COLD)]
            for n, stats in by_count.items()}
    agent = [x for found in runs.values() for s in found for x in measure.peaks_kib(s, AGENT)]
    items, held = [], []
    if agent:
        held.append(max(agent) / 1024 < AGENT_GOAL_MIB)
        items.append(f"agent peak RSS {max(agent) / 1024:.1f} MiB (goal < {AGENT_GOAL_MIB})")
    else:
        held.append(None)
        items.append("no agent process seen")
    top = max(runs, default=0)
    coordinator = [x for s in runs.get(top, []) for x in measure.peaks_kib(s, COORDINATOR)]
    if not coordinator:
        held.append(None)
        items.append("no coordinator process seen")
    elif top >= COORDINATOR_GOAL_HOSTS:
        held.append(max(coordinator) / 1024 < COORDINATOR_GOAL_MIB)
        items.append(f"coordinator peak RSS at {top} hosts {max(coordinator) / 1024:.1f} MiB "
                     f"(goal < {COORDINATOR_GOAL_MIB})")
    else:
        items.append(f"coordinator peak RSS at {top} hosts {max(coordinator) / 1024:.1f} MiB "
                     f"(goal < {COORDINATOR_GOAL_MIB} at {COORDINATOR_GOAL_HOSTS} hosts, not run)")
    return items, False if False in held else None if None in held else True


def rss_note():
    """How the peak RSS columns are measured, for the notes."""
    own = 0
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                own = int(line.split()[1]) / 1024
    return ("Peak RSS is each process's own VmHWM, polled: a lower bound, short of the peak by "
            "what a process gained in its last 20 ms. It is not os.wait4's ru_maxrss, which the "
            "suite gets for every launcher: Linux carries the high-water mark across fork and "
            "exec, so a child of the suite starts with the suite's own RSS in that figure "
            f"({own:.0f} MiB at its peak so far), whatever the child uses itself. Only agents "
            "under this run's remote cache and the measured `dlaunch` count, not another "
            "dlaunch job on the machine.")


def run(ctx):
    counts = [1, 2] if ctx.quick else [1, 2, 4, 8, 16, 32, 64]
    ranks = 8
    rows, by_count = [], {}
    failures = {}
    # Sessions get an empty HOME (sshd's SetEnv): bash sources ~/.bashrc for an SSH
    # command, and root's here runs `pyenv init`, over a second per login and a
    # lock shared with every other login on the machine. That would be measured
    # for every launcher alike, in place of the launchers.
    home = os.path.join(ctx.tmp, "remote-home")
    os.makedirs(home, exist_ok=True)
    with sshd_harness.SshHosts(max(counts), sshd_extra=f"SetEnv HOME={home}\n") as hosts, \
            measure.PeakRss(rss_groups(ctx, hosts)) as watch:
        hosts.write_known_hosts()
        cfg = os.path.join(hosts.tmp, "ssh_config")
        ssh_config(hosts, cfg)
        # One untimed run uploads the agent: every later cached run finds it, as the
        # cold run of each round uploads it again after emptying the cache.
        measure.run_once(peers(ctx, hosts, 1, ranks, cfg)[0], timeout=180)
        for n in counts:
            ctx.log(f"{NAME}: {n} host(s) x {ranks} ranks")
            stats, failed = measure.interleave(peers(ctx, hosts, n, ranks, cfg, watch),
                                               ctx.runs, ctx.warmup, timeout=180, log=ctx.log)
            for k, v in failed.items():
                failures.setdefault(k, []).append((n, v))
            by_count[n] = stats
            for row, s in zip(report.timing_rows(stats, CACHED, label=(str(n),)), stats.values()):
                peaks = [max(measure.peaks_kib(s, k), default=None) for k in (COORDINATOR, AGENT)]
                rows.append(row + [f"{s.cpu_median * 1000 / n:.2f}"]
                            + [f"{k / 1024:.1f}" if k else "-" for k in peaks])
        where = ("network namespaces on a bridge, sshd on port 22 in each" if hosts.netns
                 else "loopback, one port per sshd")
    table = report.Table(["hosts"] + report.TIMING_HEADER
                         + ["÷ dlaunch cached median", "launcher CPU ms per host (median)",
                            "coordinator peak RSS MiB", "agent peak RSS MiB"], rows)
    result = report.Result(
        NAME, "8 ranks of /bin/true on each of N SSH hosts",
        f"Real OpenSSH servers from `tests/integration/sshd_harness.py` ({where}), all on this "
        f"machine and one file system; {ranks} ranks of `/bin/true` per host. *{CACHED}*: "
        f"`dlaunch --hosts hosts.toml -- /bin/true` with the agent uploaded by an earlier run; "
        f"*{COLD}*: the same with the remote cache (`DLAUNCH_REMOTE_CACHE`) emptied before "
        f"every run, so each run uploads the agent; *{PDSH}*: `pdsh -R ssh -w h1,... true` "
        f"(one `true` per host, not 8); *{MPI}*: `mpirun --hostfile` with {ranks} slots per "
        f"host, ssh options through `--mca plm_rsh_args \"-F ssh_config\"`. "
        f"*launcher CPU per host*: user+sys of the launcher process and of the children it "
        f"reaped (os.wait4's rusage), over the host count. dlaunch speaks SSH in-process "
        f"(libssh2): its figure is the coordinator alone. pdsh's and mpirun's include their "
        f"`ssh` client processes, which are their children. *coordinator* and *agent peak RSS*: "
        f"the largest VmHWM over the runs of the `dlaunch` process and of any process whose "
        f"executable is `agent-*` in the hosts' remote cache (the uploaded dlaunch-agent), "
        f"read from /proc every 20 ms.",
        GOAL, tables=[table])
    cached = {n: s[CACHED] for n, s in by_count.items() if CACHED in s}
    pdsh = {n: s[PDSH] for n, s in by_count.items() if PDSH in s}
    if len(cached) == len(counts) and len(pdsh) == len(counts):
        slower = [n for n in counts if cached[n].median >= pdsh[n].median]
        cpu = {n: cached[n].cpu_median * 1000 / n for n in counts}
        fixed, marginal = cpu_fit({n: cached[n].cpu_median * 1000 for n in counts})
        memory, memory_ok = memory_goals(by_count)
        result.met = (False if slower or marginal >= CPU_GOAL_MS or memory_ok is False
                      else memory_ok)
        ratios = ", ".join(f"{n}: {pdsh[n].median / cached[n].median:.2f}x" for n in counts)
        result.notes.append(extrapolation(by_count, max(counts)))
        result.notes.append(
            f"Coordinator CPU, least squares over the host counts: {fixed:.1f} ms for the "
            f"launch itself (process start, libcrypto's and the dynamic loader's set-up, the "
            f"job record, the rendezvous) plus {marginal:.2f} ms per host. The goal is judged "
            f"on the per-host part, which is what grows with the cluster; divided by the host "
            f"count, the fixed part alone is {fixed:.1f} ms per host at 1 host and "
            f"{fixed / max(counts):.2f} at {max(counts)}.")
        result.verdict = (f"pdsh/dlaunch by hosts {ratios} (goal > 1x"
                          + (f"; not at {slower}" if slower else "") + "); coordinator CPU "
                          f"{marginal:.2f} ms per added host (goal < {CPU_GOAL_MS:g}), plus "
                          f"{fixed:.1f} ms per launch; total over hosts "
                          f"{min(cpu.values()):.1f} to {max(cpu.values()):.1f} ms; "
                          + "; ".join(memory))
    else:
        result.verdict = ("dlaunch or pdsh failed at some host count; "
                          + "; ".join(memory_goals(by_count)[0]))
    result.notes.append("Every sshd session gets an empty HOME (`SetEnv HOME=...` in its "
                        "sshd_config), so that no launcher's time includes this machine's "
                        "root dotfiles (its ~/.bashrc runs `pyenv init`: over a second per "
                        "login, and a lock shared with every other login here).")
    bare = {n: s[BARE] for n, s in by_count.items() if BARE in s}
    if bare and cached:
        result.notes.append(
            "Bare handshakes (the floor) against dlaunch with the agent cached, median ms by "
            "hosts: " + ", ".join(f"{n}: {bare[n].median * 1000:.0f} / {cached[n].median * 1000:.0f}"
                                  for n in counts if n in bare and n in cached)
            + ". Where the two grow alike, the sshd's key exchanges on this machine's cores are "
            "what the time is made of, not the launcher.")
    result.notes.append(rss_note())
    result.notes.append("All hosts are this machine: their ranks, agents and sshd's share its "
                        f"{os.cpu_count()} cores with the launcher, so times grow with hosts "
                        "faster than on real nodes.")
    # A peer that fails is left out for the rest of that host count only: its
    # runs before the failure count, and the next host count tries it again.
    result.notes += [f"{k} failed at {', '.join(str(n) for n, _ in v)} hosts (the rest of "
                     f"that count's rounds left out; the runs column says how many count); "
                     f"first: `{v[0][1].splitlines()[0]}`" for k, v in failures.items()]
    series = {}
    for n, stats in by_count.items():
        for name, s in stats.items():
            series.setdefault(name, []).append((n, s.median * 1000, s.min * 1000, s.max * 1000))
    png = os.path.join(ctx.plots_dir, "ssh-hosts-time.png")
    plot.lines(png, f"{ranks} ranks of /bin/true per SSH host (median, min-max)", "hosts",
               "ms", series, logx=True)
    result.plots.append(("ssh-hosts: launch time against hosts", png))
    cpu_series = {}
    for n, stats in by_count.items():
        for name, s in stats.items():
            c = [x * 1000 / n for x in s.cpu()]
            cpu_series.setdefault(name, []).append((n, s.cpu_median * 1000 / n, min(c), max(c)))
    png = os.path.join(ctx.plots_dir, "ssh-hosts-cpu.png")
    plot.lines(png, "launcher CPU (user+sys, with reaped children) per host", "hosts",
               "ms per host", cpu_series, logx=True)
    result.plots.append(("ssh-hosts: launcher CPU per host", png))
    rss_series = {}
    for n, stats in by_count.items():
        for name in (CACHED, COLD):
            for label in (COORDINATOR, AGENT):
                peaks = [x / 1024 for x in measure.peaks_kib(stats[name], label)] \
                    if name in stats else []
                if peaks:
                    rss_series.setdefault(f"{label}, {name}", []).append(
                        (n, statistics.median(peaks), min(peaks), max(peaks)))
    if rss_series:
        png = os.path.join(ctx.plots_dir, "ssh-hosts-rss.png")
        plot.lines(png, "peak RSS (VmHWM) of dlaunch's coordinator and agents (median, min-max)",
                   "hosts", "MiB", rss_series, logx=True)
        result.plots.append(("ssh-hosts: coordinator and agent peak RSS", png))
    return result
