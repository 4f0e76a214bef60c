"""Real OpenSSH servers for dlaunch's SSH tests, started by the test itself:
each with its own host key and authorized_keys, and a temporary HOME for the
client (its key, known_hosts and ssh config). When root and `ip netns` work,
every host is a network namespace with a 198.18.0.0/15 address on a private
bridge, its sshd listening on port 22 there; otherwise every sshd listens on
its own loopback port. Everything started is stopped again, also on failure."""

import atexit
import os
import pwd
import random
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

SSHD = "/usr/sbin/sshd"


def free_subnet(prefix="198.18", first=1, last=250):
    """A PREFIX.N.0/24 that no interface here uses yet: tests running in
    parallel each get their own bridge and subnet."""
    used = subprocess.run(["ip", "-o", "-4", "addr"], capture_output=True, text=True).stdout \
        if shutil.which("ip") else ""
    candidates = list(range(first, last + 1))
    random.shuffle(candidates)
    for n in candidates:
        if f" {prefix}.{n}." not in used:
            return f"{prefix}.{n}"
    raise RuntimeError(f"no free {prefix}.N.0/24 subnet left")


def make_client_key(home, tmp):
    """The client's key in HOME/.ssh and an authorized_keys in TMP that lets it
    in (also the privilege-separation directory sshd needs); returns both paths."""
    ssh_dir = os.path.join(home, ".ssh")
    os.makedirs(ssh_dir, mode=0o700)
    client_key = os.path.join(ssh_dir, "id_ed25519")
    sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", client_key)
    authorized = os.path.join(tmp, "authorized_keys")
    shutil.copy(client_key + ".pub", authorized)
    os.chmod(authorized, 0o600)
    os.makedirs("/run/sshd", exist_ok=True)
    return client_key, authorized


def have_sshd():
    return os.access(SSHD, os.X_OK) and shutil.which("ssh-keygen") is not None


MISSING_SSHD = "missing: /usr/sbin/sshd or ssh-keygen (openssh-server)"


def require_sshd():
    """Exits with the skip code when this machine cannot run the SSH tests."""
    if not have_sshd():
        harness.skip_file(MISSING_SSHD)


def can_use_netns():
    if os.geteuid() != 0 or shutil.which("ip") is None:
        return False
    name = f"dlprobe{os.getpid()}"
    ok = subprocess.run(["ip", "netns", "add", name], capture_output=True).returncode == 0
    if ok:
        subprocess.run(["ip", "netns", "del", name], capture_output=True)
    return ok


def netns_usable():
    """Whether tests may make network namespaces: root, `ip netns`, and
    DLAUNCH_TEST_NO_NETNS unset (which forces the loopback variants)."""
    return can_use_netns() and not os.environ.get("DLAUNCH_TEST_NO_NETNS")


def require_netns(tests_need):
    """Ends the test program as skipped, saying why, unless netns_usable()."""
    if not netns_usable():
        harness.skip_file(f"{harness.netns_reason() or 'no network namespaces'} "
                          f"({tests_need} need them)")


def coordinator_env(tmp, **extra):
    """The environment a test's dlaunch runs with, against hosts set up under
    `tmp`: HOME (the client key and known_hosts), the hosts' agent cache and
    the state dir there, no ssh-agent; `extra` on top."""
    env = dict(os.environ)
    env["HOME"] = os.path.join(tmp, "home")
    env["DLAUNCH_REMOTE_CACHE"] = os.path.join(tmp, "remote-cache")
    env["DLAUNCH_STATE_DIR"] = os.path.join(tmp, "state")
    env.pop("SSH_AUTH_SOCK", None)
    env.update(extra)
    return env


def processes_with_marker(job):
    """PIDs carrying the job's marker in every network namespace: they all share
    /proc, so harness's one scan finds the ranks of every host."""
    return harness.processes_with_marker(job)


def check_noexec_cache_fallback(test, hosts):
    """An agent cache on a noexec mount (inside the first host's sshd, whose
    mount namespace is its own): the agent is installed under
    /tmp/dlaunch-UID instead, with a warning that names both, and that
    directory is the user's alone. What the run adds there is removed."""
    cache = os.path.join(hosts.tmp, "noexec-cache")
    os.makedirs(cache, exist_ok=True)
    in_sshd = ["nsenter", "-t", str(hosts.hosts[0]["proc"].pid), "-m"]
    mounted = subprocess.run(in_sshd + ["mount", "-t", "tmpfs", "-o", "noexec,size=64m", "tmpfs",
                                        cache], capture_output=True, text=True)
    if mounted.returncode != 0:
        test.skipTest(f"no mounts: mount -t tmpfs in the host's mount namespace failed: "
                      f"{mounted.stderr.strip()}")
    fallback = f"/tmp/dlaunch-{os.getuid()}"
    existed = os.path.isdir(fallback)
    before = set(os.listdir(fallback)) if existed else set()
    try:
        r = hosts.dlaunch(["--hosts", hosts.hosts_file([1]), "--", "true"],
                          DLAUNCH_REMOTE_CACHE=cache)
        test.assertEqual(r.returncode, 0, r.stderr)
        test.assertIn(f"h1: {cache} does not let the agent run (noexec?); "
                      f"using {fallback}/agent-", r.stderr)
        test.assertEqual(os.stat(fallback).st_mode & 0o777, 0o700)
    finally:
        subprocess.run(in_sshd + ["umount", cache], capture_output=True)
        if os.path.isdir(fallback):
            for name in set(os.listdir(fallback)) - before:
                os.remove(os.path.join(fallback, name))
            if not existed:
                os.rmdir(fallback)


def cgroup_mounts_script():
    """Shell commands that mount, in a fresh sysfs, the cgroup file systems
    this machine has under /sys/fs/cgroup (v1, v2 or both), with the same
    options, so that they name the same hierarchies."""
    lines = []
    with open("/proc/self/mounts") as f:
        for line in f:
            source, target, fstype, options = line.split()[:4]
            if not target.startswith("/sys/fs/cgroup"):
                continue
            if fstype not in ("tmpfs", "cgroup", "cgroup2"):
                continue
            lines.append(f"mkdir -p {shlex.quote(target)} && mount -t {fstype} -o "
                         f"{shlex.quote(options)} {shlex.quote(source)} {shlex.quote(target)} && ")
    return "".join(lines)


def hide_startup_files(tmp):
    """Shell commands, for a namespaced sshd in a mount namespace of its own,
    that put an empty file over this machine's ~/.bashrc for its sessions
    alone ("" when there is none): bash reads it for every command sshd
    runs, and a machine's own (a pyenv or conda init) costs a few hundred ms
    of CPU a command, most of a test's time, and has hung logins when its
    lock file went stale. The test
    hosts are the test's own; a startup file that a test wants, it sets itself
    (BASH_ENV, see test_ssh_transport's ChattyShellTest)."""
    rc = os.path.join(pwd.getpwuid(os.getuid()).pw_dir, ".bashrc")  # the home sshd gives
    if not os.path.isfile(rc):
        return ""
    empty = os.path.join(tmp, "empty_bashrc")
    open(empty, "w").close()
    return f"mount --bind {shlex.quote(empty)} {shlex.quote(rc)} && "


def sh(*args, check=True):
    return subprocess.run(list(args), check=check, capture_output=True, text=True)


_loopback_recorded = False


def _record_loopback_hosts():
    """Records (once per test file) that its SSH test hosts listen on loopback
    ports: what needs namespaces (a link cut, another host's address) is left out."""
    global _loopback_recorded
    if not _loopback_recorded:
        _loopback_recorded = True
        harness.record_skip(f"{harness.netns_reason() or 'no network namespaces'} (the SSH test "
                            "hosts listen on loopback ports instead)")


class SshHosts:
    """`n` sshd hosts. Use as a context manager."""

    def __init__(self, n, netns=None, key_types=("ed25519",), sshd_extra="", sftp=True,
                 roots=None, root_sshd=None, root_binds=None, cgroups=False):
        """`key_types`: the host keys each sshd has; known_hosts lines use the first.
        `sshd_extra`: more sshd_config lines, or a function of the host's name
        that returns them. `sftp=False`: no `Subsystem sftp`
        line, as on hardened images. `roots`: per host, a directory holding a
        whole userland (its own sshd, libc and shell) that the host's sshd runs
        chrooted in, with /proc, /sys and /dev mounted in a mount namespace of
        its own; None: this machine's. `root_sshd`: per host, how to start sshd
        inside its root (default: /usr/sbin/sshd). `root_binds`: per host, (file
        here, path in the root) pairs bind-mounted for that host alone.
        `cgroups`: mount this machine's cgroup hierarchies in each namespaced
        sshd's own /sys (ip netns exec mounts a fresh sysfs without them), as
        container runtimes need."""
        self.cgroups = cgroups
        self.n = n
        self.roots = roots
        self.root_sshd = root_sshd
        self.root_binds = root_binds
        self.sftp = sftp
        self.key_types = key_types
        self.sshd_extra = sshd_extra
        if netns is None:
            netns = netns_usable()
            if not netns:
                _record_loopback_hosts()
        self.netns = netns
        self.tmp = tempfile.mkdtemp(prefix="dlaunch-sshd-")
        self.home = os.path.join(self.tmp, "home")
        self.remote_cache = os.path.join(self.tmp, "remote-cache")
        self.procs = []
        self.namespaces = []
        self.links = []
        self.hosts = []  # dicts: name, address, port, host_key_pub, ns
        self.tag = f"{os.getpid() % 10000}{random.randint(0, 99)}"
        self.subnet = free_subnet()
        atexit.register(self.close)

    def __enter__(self):
        try:
            self._start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc):
        self.close()

    # -- set-up ---------------------------------------------------------------
    def _start(self):
        self.client_key, self.authorized = make_client_key(self.home, self.tmp)
        if self.netns:
            self._make_bridge()
        for i in range(self.n):
            self._start_host(i)
        for h in self.hosts:
            self._wait_listening(h)

    def _make_bridge(self):
        self.bridge = f"dlbr{self.tag}"
        sh("ip", "link", "add", self.bridge, "type", "bridge")
        self.links.append(self.bridge)
        sh("ip", "addr", "add", f"{self.subnet}.254/24", "dev", self.bridge)
        sh("ip", "link", "set", self.bridge, "up")

    def _start_host(self, i):
        name = f"h{i + 1}"
        root = self.roots[i] if self.roots else None
        # A chrooted sshd reads its files inside the root: `inside` names them there.
        # Per host: several hosts may share one root.
        files = os.path.join(root, "etc", "dlaunch-test", name) if root else self.tmp
        if root:  # a cached root keeps the files of an earlier run
            shutil.rmtree(files, ignore_errors=True)
        os.makedirs(files, exist_ok=True)

        def inside(path):
            return "/" + os.path.relpath(path, root) if root else path
        key = os.path.join(files, f"{name}_host_key")
        sh("ssh-keygen", "-q", "-t", self.key_types[0], "-N", "", "-f", key)
        keys = {self.key_types[0]: key}
        for t in self.key_types[1:]:
            keys[t] = f"{key}_{t}"
            sh("ssh-keygen", "-q", "-t", t, "-N", "", "-f", keys[t])
        if self.netns:
            ns = f"dl{self.tag}{name}"
            veth = f"dv{self.tag}{name}"
            sh("ip", "netns", "add", ns)
            self.namespaces.append(ns)
            sh("ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns)
            self.links.append(veth)
            sh("ip", "link", "set", veth, "master", self.bridge)
            sh("ip", "link", "set", veth, "up")
            address = f"{self.subnet}.{i + 1}"
            for cmd in (["ip", "addr", "add", f"{address}/24", "dev", "eth0"],
                        ["ip", "link", "set", "eth0", "up"], ["ip", "link", "set", "lo", "up"]):
                sh("ip", "netns", "exec", ns, *cmd)
            port = 22
        else:
            ns = None
            address = "127.0.0.1"
            with __import__("socket").socket() as s:
                s.bind(("127.0.0.1", 0))
                port = s.getsockname()[1]
        authorized = self.authorized
        if root:
            authorized = os.path.join(files, "authorized_keys")
            shutil.copy(self.authorized, authorized)
            os.makedirs(os.path.join(root, "run", "sshd"), mode=0o755, exist_ok=True)
        config = os.path.join(files, f"{name}_sshd_config")
        with open(config, "w") as f:
            f.write(f"""Port {port}
ListenAddress {address}
{"".join(f"HostKey {inside(k)}{chr(10)}" for k in keys.values())}PidFile {inside(files)}/{name}.pid
AuthorizedKeysFile {inside(authorized)}
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
{"Subsystem sftp internal-sftp" if self.sftp else ""}
LogLevel ERROR
MaxStartups 200
MaxSessions 50
{self.sshd_extra(name) if callable(self.sshd_extra) else self.sshd_extra}""")
        cmd = [SSHD, "-D", "-e", "-f", config]
        if root:
            binds = "".join(
                f"mount --bind {shlex.quote(src)} \"$root\"{shlex.quote(dst)} && "
                for src, dst in ((self.root_binds[i] if self.root_binds else None) or []))
            mount_and_chroot = ('root=$1; shift; mount -t proc proc "$root/proc" && '
                                'mount -t sysfs sysfs "$root/sys" && '
                                f'mount --rbind /dev "$root/dev" && {binds}exec chroot "$root" "$@"')
            sshd = (self.root_sshd[i] if self.root_sshd else None) or [SSHD]
            cmd = ["unshare", "-m", "--propagation", "private", "sh", "-c", mount_and_chroot, "sh",
                   root, *sshd, "-D", "-e", "-f", inside(config)]
        hide = hide_startup_files(self.tmp) if ns and not root else ""
        if hide:
            # A slave of the namespace `ip netns exec` made, as that one is of
            # this machine's: mounts made out there still come in.
            cmd = ["unshare", "-m", "--propagation", "slave", "sh", "-c", hide + 'exec "$@"',
                   "sh"] + cmd
        if ns and self.cgroups:
            cmd = ["sh", "-c", cgroup_mounts_script() + 'exec "$@"', "sh"] + cmd
        if ns:
            cmd = ["ip", "netns", "exec", ns] + cmd
        log = open(os.path.join(self.tmp, f"{name}_sshd.log"), "w")
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        self.procs.append(proc)
        pubs = {}
        for t, k in keys.items():
            with open(k + ".pub") as f:
                pubs[t] = " ".join(f.read().split()[:2])
        self.hosts.append({"name": name, "address": address, "port": port, "ns": ns,
                           "host_key_pub": pubs[self.key_types[0]], "host_key_pubs": pubs,
                           "key_file": key, "proc": proc})

    def _wait_listening(self, h, timeout=15):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if h["proc"].poll() is not None:
                raise RuntimeError(f"sshd for {h['name']} exited: "
                                   + open(os.path.join(self.tmp, f"{h['name']}_sshd.log")).read())
            cmd = ["bash", "-c", f"exec 3<>/dev/tcp/{h['address']}/{h['port']}"]
            if subprocess.run(cmd, capture_output=True).returncode == 0:
                return
            time.sleep(0.05)
        raise RuntimeError(f"sshd for {h['name']} did not start listening")

    # -- helpers for tests ------------------------------------------------------
    def known_hosts_name(self, h):
        return h["address"] if h["port"] == 22 else f"[{h['address']}]:{h['port']}"

    def write_known_hosts(self, hosts=None, key_type=None):
        """known_hosts with each host's key of `key_type` (default: the first type)."""
        path = os.path.join(self.home, ".ssh", "known_hosts")
        with open(path, "w") as f:
            for h in hosts if hosts is not None else self.hosts:
                pub = h["host_key_pubs"][key_type] if key_type else h["host_key_pub"]
                f.write(f"{self.known_hosts_name(h)} {pub}\n")
        return path

    def session_pids(self, h):
        """The per-connection sshd processes of a host (children of its listener)."""
        found = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat") as f:
                    parent = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            if parent == h["proc"].pid:
                found.append(int(entry))
        return found

    def hosts_file(self, slots, extra="", name="hosts.toml", hosts=None, host_extra=None):
        """`hosts`: which hosts to list (default: all, in order); `host_extra`:
        more TOML lines per host name."""
        path = os.path.join(self.tmp, name)
        with open(path, "w") as f:
            f.write(extra)
            for h, s in zip(hosts if hosts is not None else self.hosts, slots):
                f.write(f'[[host]]\nname = "{h["name"]}"\naddress = "{h["address"]}"\n'
                        f'port = {h["port"]}\nuser = "root"\nslots = {s}\n'
                        f'{(host_extra or {}).get(h["name"], "")}\n')
        return path

    def write_ssh_config(self, text):
        path = os.path.join(self.home, ".ssh", "config")
        with open(path, "w") as f:
            f.write(text)
        return path

    def firewall_ssh(self, h, allow):
        """Inside `h`'s namespace, refuses TCP port 22 (with a reset, so that
        a refused client fails at once) from every address but those in
        `allow`. nft, else iptables; False when neither works."""
        if not h["ns"]:
            return False
        in_ns = ["ip", "netns", "exec", h["ns"]]
        rules = (f"table inet dlaunch_test {{\n chain input {{\n"
                 f"  type filter hook input priority 0; policy accept;\n"
                 f"  tcp dport 22 ip saddr {{ {', '.join(allow)} }} accept\n"
                 f"  tcp dport 22 reject with tcp reset\n }}\n}}\n")
        if shutil.which("nft") and subprocess.run(in_ns + ["nft", "-f", "-"], input=rules,
                                                  capture_output=True, text=True).returncode == 0:
            return True
        if not shutil.which("iptables"):
            return False
        for a in allow:
            if subprocess.run(in_ns + ["iptables", "-A", "INPUT", "-p", "tcp", "--dport", "22",
                                       "-s", a, "-j", "ACCEPT"], capture_output=True).returncode:
                return False
        return subprocess.run(in_ns + ["iptables", "-A", "INPUT", "-p", "tcp", "--dport", "22",
                                       "-j", "REJECT", "--reject-with", "tcp-reset"],
                              capture_output=True).returncode == 0

    def dlaunch(self, args, timeout=120, **extra_env):
        """dlaunch run to its end against these hosts (their keys, known_hosts
        and state dir), with `extra_env` on top of env()."""
        return harness.dlaunch(args, self.env(**extra_env), timeout)

    def env(self, **extra):
        return coordinator_env(self.tmp, **extra)

    def restart_with_new_host_key(self, h):
        """Gives a host a new host key (as after a reinstall) and restarts its sshd."""
        os.remove(h["key_file"])
        os.remove(h["key_file"] + ".pub")
        t = self.key_types[0]
        sh("ssh-keygen", "-q", "-t", t, "-N", "", "-f", h["key_file"])
        with open(h["key_file"] + ".pub") as f:
            h["host_key_pub"] = h["host_key_pubs"][t] = " ".join(f.read().split()[:2])
        os.killpg(h["proc"].pid, signal.SIGTERM)
        h["proc"].wait()
        cmd = [SSHD, "-D", "-e", "-f", os.path.join(self.tmp, f"{h['name']}_sshd_config")]
        if h["ns"]:
            cmd = ["ip", "netns", "exec", h["ns"]] + cmd
        h["proc"] = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     start_new_session=True)
        self.procs.append(h["proc"])
        self._wait_listening(h)

    def block_connections_to(self, h, address):
        """Inside `h`'s namespace, refuses every TCP connection the host
        opens to `address` (as NAT in front of the coordinator would); SSH
        connections from there to the host still work. nft, else iptables;
        False when neither works."""
        if not h["ns"]:
            return False
        in_ns = ["ip", "netns", "exec", h["ns"]]
        rules = (f"table inet dlaunch_test_out {{\n chain output {{\n"
                 f"  type filter hook output priority 0; policy accept;\n"
                 f"  ip daddr {address} meta l4proto tcp ct state new reject with tcp reset\n"
                 f" }}\n}}\n")
        if shutil.which("nft") and subprocess.run(in_ns + ["nft", "-f", "-"], input=rules,
                                                  capture_output=True, text=True).returncode == 0:
            return True
        return shutil.which("iptables") is not None and subprocess.run(
            in_ns + ["iptables", "-A", "OUTPUT", "-d", address, "-p", "tcp", "-m", "conntrack",
                     "--ctstate", "NEW", "-j", "REJECT", "--reject-with", "tcp-reset"],
            capture_output=True).returncode == 0

    def close(self):
        harness.kill_process_groups(self.procs)
        self.procs = []
        for ns in self.namespaces:
            # kill anything still running inside (agents, ranks) before deleting it
            pids = sh("ip", "netns", "pids", ns, check=False).stdout.split()
            for pid in pids:
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except OSError:
                    pass
            sh("ip", "netns", "del", ns, check=False)
        self.namespaces = []
        for link in self.links:
            sh("ip", "link", "del", link, check=False)
        self.links = []
        shutil.rmtree(self.tmp, ignore_errors=True)
