"""A two-region network in namespaces, for dlaunch's cross-region tests (issue 12).

    root namespace (the coordinator, `dlaunch`)
      | management links: one point-to-point veth per host, 198.19.M.(4i+1)/30
      | (root side) <-> 198.19.M.(4i+2)/30 (host side, "eth0" on every host);
      | no forwarding between them, so only the coordinator reaches them
      |
    h0 (ens5 198.18.1.10) --+                                 +-- (enp3s0 198.18.2.11) h1
                 region A   |                                 |   region B
    [more A hosts]       lan0 198.18.1.1  rA          rB  lan0 198.18.2.1  [h2 eth7 198.18.2.12]
                                          | wan0      wan0 |
                             198.18.100.1/30              198.18.100.5/30
                                          |                |
                                          +---- inet ------+   (forwards 198.18.100.0/29 only)
                            vx0: VXLAN rA<->rB over inet, 198.18.200.1/30 <-> .2/30, MTU 1450

Region A and region B reach each other only through the tunnel: the internet
namespace has no route to either region, and the routers send region traffic
into vx0. Each host's default route is its region router, which has no route
to 198.19.0.0/16, so a host cannot reach another host's management address.

Every host runs an sshd on its management address, port 22, with its own host
key; the client's key and known_hosts live in a temporary HOME (see `env()`).
Every host also has its own UTS namespace (host name "dlx-<name>").

Names carry this process's pid (namespaces "dlx<pid>-h0", "dlx<pid>-rA", ...;
root-side links "dlx<pid>m<i>"); everything is removed on exit, on failure
and on SIGTERM, and leftovers of a crashed run (a pid no longer alive) are
removed at the next start.

    python3 tests/integration/netns_topology.py --selfcheck [--hosts 3]

builds it, proves it (see `selfcheck`), prints a summary and tears it down.
"""

import argparse
import atexit
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import sshd_harness  # noqa: E402

PREFIX = "dlx"
REGION_SUBNET = {"A": "198.18.1", "B": "198.18.2"}
ROUTER = {"A": "rA", "B": "rB"}
# Region interface names, one per host in order: every host's differs.
IFNAMES = ["ens5", "enp3s0", "eth7", "eno2", "enp0s31f6", "ens1f1", "eth3", "enx9"]
MGMT_IFNAME = "eth0"  # the management interface (same name on every host)
TUNNEL_MTU = 1450     # VXLAN over a 1500-byte underlay: 1500 - 50
NFT_TABLE = "dlx_block"
TMP_PREFIX = "dlaunch-netns-"


def sh(*args, check=True, timeout=60, **kwargs):
    r = subprocess.run(list(args), capture_output=True, text=True, timeout=timeout, **kwargs)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: exit {r.returncode}: {r.stderr.strip()}")
    return r


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def kill_netns(ns):
    """Kills everything inside a namespace (sshd, agents, ranks), then deletes it."""
    for pid in sh("ip", "netns", "pids", ns, check=False).stdout.split():
        try:
            os.kill(int(pid), signal.SIGKILL)
        except (OSError, ValueError):
            pass
    sh("ip", "netns", "del", ns, check=False)


def remove_stale():
    """Removes namespaces and root links left by a run whose process is gone."""
    listing = sh("ip", "netns", "list", check=False).stdout
    for line in listing.splitlines():
        m = re.match(rf"({PREFIX}(\d+)-\S+)", line)
        if m and not alive(int(m.group(2))):
            kill_netns(m.group(1))
    for line in sh("ip", "-o", "link", check=False).stdout.splitlines():
        m = re.match(rf"\d+: ({PREFIX}(\d+)m\d+)[@:]", line)
        if m and not alive(int(m.group(2))):
            sh("ip", "link", "del", m.group(1), check=False)
    tmp = tempfile.gettempdir()
    for entry in os.listdir(tmp):
        m = re.match(rf"{TMP_PREFIX}(\d+)-", entry)
        if m and not alive(int(m.group(1))):
            shutil.rmtree(os.path.join(tmp, entry), ignore_errors=True)


def free_mgmt_block():
    """A 198.19.M.0/24 that no interface of the root namespace uses yet, so that
    topologies built by tests running in parallel do not overlap."""
    return sshd_harness.free_subnet("198.19", 1, 254)


def require_topology():
    """Exits with the skip code where the topology cannot be built."""
    if os.geteuid() != 0:
        harness.skip_file("not root: the cross-region topology needs network namespaces")
    sshd_harness.require_sshd()
    why = harness.netns_reason(honour_opt_out=False)
    if why:
        harness.skip_file(why)
    for tool, package in (("nft", "nftables"), ("unshare", "util-linux")):
        if shutil.which(tool) is None:
            harness.skip_file(f"missing: {tool} ({package})")


class Topology:
    """The two regions and their hosts. Use as a context manager.

    `hosts`: (name, region) pairs, node 0 first and in region "A". After entry
    `self.hosts` is a list of dicts with: name, region, ns, ifname (region
    interface), addr (region address), mgmt_addr (what the coordinator uses),
    mgmt_peer (the root end of its management link), mgmt_ifname, hostname,
    host_key_pub, small_shm."""

    def __init__(self, hosts=(("h0", "A"), ("h1", "B"))):
        hosts = list(hosts)
        if not hosts or hosts[0][1] != "A":
            raise ValueError("node 0 goes first, in region A")
        if len(hosts) > len(IFNAMES):
            raise ValueError(f"at most {len(IFNAMES)} hosts")
        self.pid = os.getpid()
        self.tmp = tempfile.mkdtemp(prefix=f"{TMP_PREFIX}{self.pid}-")
        self.home = os.path.join(self.tmp, "home")
        self.remote_cache = os.path.join(self.tmp, "remote-cache")
        self.namespaces = []
        self.links = []
        self.procs = {}
        self.hosts = []
        self.spec = hosts
        self.mgmt = None
        self._closed = False
        atexit.register(self.close)
        _LIVE.append(self)
        _sigterm_exits()

    def ns_name(self, role):
        return f"{PREFIX}{self.pid}-{role}"

    @property
    def router(self):
        return {r: self.ns_name(n) for r, n in ROUTER.items()}

    @property
    def inet(self):
        return self.ns_name("inet")

    def host(self, name):
        return next(h for h in self.hosts if h["name"] == name)

    def __enter__(self):
        try:
            self._build()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc):
        self.close()

    # -- building -----------------------------------------------------------------
    def _add_ns(self, role):
        ns = self.ns_name(role)
        sh("ip", "netns", "add", ns)
        self.namespaces.append(ns)
        self.ip(ns, "link", "set", "lo", "up")
        return ns

    def ip(self, ns, *args):
        return sh("ip", "-n", ns, *args)

    def sysctl(self, ns, key, value):
        sh("ip", "netns", "exec", ns, "sysctl", "-q", "-w", f"{key}={value}")

    def _build(self):
        remove_stale()
        self.mgmt = free_mgmt_block()
        inet = self._add_ns("inet")
        rA, rB = self._add_ns("rA"), self._add_ns("rB")
        self.sysctl(inet, "net.ipv4.ip_forward", 1)
        # Router <-> internet links (the underlay): rA 198.18.100.1/30, rB .5/30.
        wan = {"A": (rA, "198.18.100.1", "198.18.100.2", "toA"),
               "B": (rB, "198.18.100.5", "198.18.100.6", "toB")}
        for region, (router, addr, gw, inet_if) in wan.items():
            self.ip(router, "link", "add", "wan0", "type", "veth", "peer", "name", inet_if,
                    "netns", inet)
            self.ip(router, "addr", "add", f"{addr}/30", "dev", "wan0")
            self.ip(inet, "addr", "add", f"{gw}/30", "dev", inet_if)
            self.ip(router, "link", "set", "wan0", "up")
            self.ip(inet, "link", "set", inet_if, "up")
            self.ip(router, "route", "add", "198.18.100.0/29", "via", gw)
            self.sysctl(router, "net.ipv4.ip_forward", 1)
            # The region's switch, with the router's address on it.
            self.ip(router, "link", "add", "lan0", "type", "bridge")
            self.ip(router, "addr", "add", f"{REGION_SUBNET[region]}.1/24", "dev", "lan0")
            self.ip(router, "link", "set", "lan0", "up")
        # The tunnel: VXLAN between the routers' underlay addresses.
        tunnel = {"A": (rA, "198.18.100.1", "198.18.100.5", "198.18.200.1", "198.18.200.2", "B"),
                  "B": (rB, "198.18.100.5", "198.18.100.1", "198.18.200.2", "198.18.200.1", "A")}
        for router, local, remote, addr, peer, other in tunnel.values():
            self.ip(router, "link", "add", "vx0", "type", "vxlan", "id", "12", "local", local,
                    "remote", remote, "dstport", "4789", "dev", "wan0")
            self.ip(router, "link", "set", "vx0", "mtu", str(TUNNEL_MTU), "up")
            self.ip(router, "addr", "add", f"{addr}/30", "dev", "vx0")
            self.ip(router, "route", "add", f"{REGION_SUBNET[other]}.0/24", "via", peer,
                    "dev", "vx0")
        for i, (name, region) in enumerate(self.spec):
            self._add_host(i, name, region)
        self._start_ssh()

    def _add_host(self, i, name, region):
        ns = self._add_ns(name)
        router = self.router[region]
        ifname = IFNAMES[i]
        addr = f"{REGION_SUBNET[region]}.{10 + i}"
        # Region interface: a veth whose router end is a port of the region's bridge.
        self.ip(ns, "link", "add", ifname, "type", "veth", "peer", "name", f"p{name}",
                "netns", router)
        self.ip(router, "link", "set", f"p{name}", "master", "lan0", "up")
        self.ip(ns, "addr", "add", f"{addr}/24", "dev", ifname)
        self.ip(ns, "link", "set", ifname, "up")
        self.ip(ns, "route", "add", "default", "via", f"{REGION_SUBNET[region]}.1")
        # Management link from the root namespace: a /30 of its own.
        link = f"{PREFIX}{self.pid}m{i}"
        mgmt_peer, mgmt_addr = f"{self.mgmt}.{4 * i + 1}", f"{self.mgmt}.{4 * i + 2}"
        sh("ip", "link", "add", link, "type", "veth", "peer", "name", MGMT_IFNAME, "netns", ns)
        self.links.append(link)
        sh("ip", "addr", "add", f"{mgmt_peer}/30", "dev", link)
        sh("ip", "link", "set", link, "up")
        # Never forward between management links, whatever the root's ip_forward says.
        sh("sysctl", "-q", "-w", f"net.ipv4.conf.{link}.forwarding=0")
        self.ip(ns, "addr", "add", f"{mgmt_addr}/30", "dev", MGMT_IFNAME)
        self.ip(ns, "link", "set", MGMT_IFNAME, "up")
        self.hosts.append({"name": name, "region": region, "ns": ns, "ifname": ifname,
                           "addr": addr, "mgmt_addr": mgmt_addr, "mgmt_peer": mgmt_peer,
                           "mgmt_ifname": MGMT_IFNAME, "root_link": link, "port": 22,
                           "hostname": f"dlx-{name}", "small_shm": False})

    def _start_ssh(self):
        ssh_dir = os.path.join(self.home, ".ssh")
        self.client_key, self.authorized = sshd_harness.make_client_key(self.home, self.tmp)
        for h in self.hosts:
            key = os.path.join(self.tmp, f"{h['name']}_host_key")
            sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", key)
            with open(key + ".pub") as f:
                h["host_key_pub"] = " ".join(f.read().split()[:2])
            with open(os.path.join(self.tmp, f"{h['name']}_sshd_config"), "w") as f:
                f.write(f"""Port 22
ListenAddress {h['mgmt_addr']}
HostKey {key}
PidFile {self.tmp}/{h['name']}.pid
AuthorizedKeysFile {self.authorized}
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
Subsystem sftp internal-sftp
LogLevel ERROR
MaxStartups 200
MaxSessions 50
""")
            self._start_sshd(h)
        with open(os.path.join(ssh_dir, "known_hosts"), "w") as f:
            for h in self.hosts:
                f.write(f"{h['mgmt_addr']} {h['host_key_pub']}\n")
        for h in self.hosts:
            self._wait_sshd(h)

    def _start_sshd(self, h):
        """sshd in the host's network namespace, and UTS and mount namespaces
        of its own (without this machine's ~/.bashrc, see
        sshd_harness.hide_startup_files, and with small_shm a 64 MiB /dev/shm):
        every process it starts for a session inherits them."""
        config = os.path.join(self.tmp, f"{h['name']}_sshd_config")
        script = f"hostname {h['hostname']} && "
        # slave, as `ip netns exec` leaves its own: mounts made out there still come in.
        unshare = ["unshare", "-u", "-m", "--propagation", "slave"]
        script += sshd_harness.hide_startup_files(self.tmp)
        if h["small_shm"]:
            script += "mount -t tmpfs -o size=64m tmpfs /dev/shm && "
        script += f"exec {sshd_harness.SSHD} -D -e -f {config}"
        log = open(os.path.join(self.tmp, f"{h['name']}_sshd.log"), "a")
        self.procs[h["name"]] = subprocess.Popen(
            ["ip", "netns", "exec", h["ns"]] + unshare + ["sh", "-c", script],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()

    def _wait_sshd(self, h, timeout=15):
        deadline = time.monotonic() + timeout
        proc = self.procs[h["name"]]
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                with open(os.path.join(self.tmp, f"{h['name']}_sshd.log")) as f:
                    raise RuntimeError(f"sshd for {h['name']} exited: {f.read()}")
            if tcp_connect(None, h["mgmt_addr"], 22, timeout=1.0)[0]:
                return
            time.sleep(0.05)
        raise RuntimeError(f"sshd for {h['name']} did not start listening")

    def _stop_sshd(self, h):
        proc = self.procs.pop(h["name"], None)
        if proc and proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass
            proc.wait()

    # -- helpers for tests ----------------------------------------------------------
    def run(self, ns, cmd, check=False, timeout=60, **kwargs):
        """Runs `cmd` (a list, or a string for sh -c) inside namespace `ns` (a
        namespace name or a host name); returns the CompletedProcess (text)."""
        ns = self._ns(ns)
        if isinstance(cmd, str):
            cmd = ["sh", "-c", cmd]
        return sh("ip", "netns", "exec", ns, *cmd, check=check, timeout=timeout, **kwargs)

    def _ns(self, ns):
        if isinstance(ns, dict):
            return ns["ns"]
        for h in self.hosts:
            if ns == h["name"]:
                return h["ns"]
        if ns in ROUTER.values() or ns == "inet":
            return self.ns_name(ns)
        return ns

    def block(self, ns, from_addr, except_ports=(22,)):
        """Drops TCP arriving in `ns` from `from_addr`, except to `except_ports`
        (an nft table of our own, so `unblock` removes exactly this)."""
        ns = self._ns(ns)
        ports = ", ".join(str(p) for p in except_ports)
        rule = f"ip saddr {from_addr} meta l4proto tcp drop"
        if except_ports:
            rule = f"ip saddr {from_addr} tcp dport != {{ {ports} }} drop"
        text = (f"table inet {NFT_TABLE} {{\n"
                f"  chain input {{ type filter hook input priority 0; policy accept;\n"
                f"    {rule}\n  }}\n}}\n")
        sh("ip", "netns", "exec", ns, "nft", "-f", "-", input=text)

    def unblock(self, ns):
        sh("ip", "netns", "exec", self._ns(ns), "nft", "delete", "table", "inet", NFT_TABLE,
           check=False)

    def mount_small_shm(self, ns):
        """Restarts the host's sshd in a mount namespace where /dev/shm is a
        64 MiB tmpfs: every later session (agents, ranks) sees the small one."""
        h = next(h for h in self.hosts if self._ns(ns) == h["ns"])
        self._stop_sshd(h)
        h["small_shm"] = True
        self._start_sshd(h)
        self._wait_sshd(h)

    def env(self, **extra):
        """The coordinator's environment: HOME with the client key and known_hosts."""
        return sshd_harness.coordinator_env(self.tmp, **extra)

    def hosts_file(self, path=None, slots=1, extra="", host_extra=None):
        """A hosts file listing every host by its management address, node 0
        first. `extra`: text before the hosts (e.g. a [rendezvous] table);
        `host_extra`: {name: lines} added to that host's table."""
        path = path or os.path.join(self.tmp, "hosts.toml")
        host_extra = host_extra or {}
        with open(path, "w") as f:
            f.write(extra)
            for h in self.hosts:
                f.write(f'[[host]]\nname = "{h["name"]}"\naddress = "{h["mgmt_addr"]}"\n'
                        f'port = 22\nuser = "root"\nslots = {slots}\n'
                        f'{host_extra.get(h["name"], "")}\n')
        return path

    def ssh(self, h, command, timeout=20):
        """OpenSSH from the root namespace to a host's management address, with
        the topology's key and known_hosts (strict host key checking)."""
        return sh("ssh", "-F", "/dev/null", "-o", "BatchMode=yes",
                  "-o", "StrictHostKeyChecking=yes",
                  "-o", f"UserKnownHostsFile={self.home}/.ssh/known_hosts",
                  "-o", "ConnectTimeout=5", "-i", self.client_key,
                  f"root@{h['mgmt_addr']}", command, check=False, timeout=timeout)

    def close(self):
        if self._closed:
            return
        self._closed = True
        if self in _LIVE:
            _LIVE.remove(self)
        for h in list(self.hosts):
            self._stop_sshd(h)
        for ns in self.namespaces:
            kill_netns(ns)
        self.namespaces = []
        for link in self.links:  # gone with their peers' namespaces, normally
            sh("ip", "link", "del", link, check=False)
        self.links = []
        shutil.rmtree(self.tmp, ignore_errors=True)

    # -- self-check -------------------------------------------------------------------
    def selfcheck(self):
        """Proves the topology; returns [(what, ok, detail)]."""
        results = []

        def check(what, ok, detail=""):
            results.append((what, bool(ok), detail))

        h0 = self.hosts[0]
        far = [h for h in self.hosts if h["region"] == "B"]
        near = [h for h in self.hosts[1:] if h["region"] == "A"]
        port = 29500 + random.randint(0, 999)
        listener = TcpSink(self, h0, port)
        try:
            for h in far + near:
                ok, detail = tcp_bulk(self, h, h0["addr"], port, 256 * 1024)
                check(f"{h['name']} -> h0 region {h0['addr']}:{port} (256 KiB, TCP)", ok, detail)
            for h in far:
                mtu = path_mtu(self, h, h0["addr"])
                check(f"path MTU {h['name']} -> {h0['addr']} across the tunnel is below 1500",
                      mtu is not None and mtu < 1500, f"{mtu}")
            for a in self.hosts:
                for b in self.hosts:
                    if a is b:
                        continue
                    ok, detail = tcp_connect(a, b["mgmt_addr"], 22, timeout=1.5)
                    check(f"{a['name']} cannot reach {b['name']}'s management "
                          f"{b['mgmt_addr']}:22", not ok, detail)
            for region, other in (("A", "B"), ("B", "A")):
                dst = f"{REGION_SUBNET[other]}.10"
                r = self.run(ROUTER[region], ["ip", "route", "get", dst])
                check(f"{ROUTER[region]} routes region {other} through the tunnel",
                      " dev vx0 " in r.stdout, r.stdout.split("\n")[0].strip())
            routes = [self.run("inet", ["ip", "route", "get", f"{REGION_SUBNET[x]}.10"]).returncode
                      for x in "AB"]
            check("the internet namespace has no route to either region", 0 not in routes)
            fwd = [open(f"/proc/sys/net/ipv4/conf/{h['root_link']}/forwarding").read().strip()
                   for h in self.hosts]
            check("root namespace forwards nothing from management links",
                  set(fwd) == {"0"}, f"forwarding={','.join(fwd)}")
            for h in self.hosts:
                r = self.ssh(h, f"hostname; ip -o -4 addr show dev {h['ifname']}")
                ok = r.returncode == 0 and h["addr"] + "/" in r.stdout
                check(f"coordinator ssh root@{h['mgmt_addr']} reaches {h['name']} "
                      f"({h['ifname']} {h['addr']})", ok,
                      r.stdout.split()[0] if ok else r.stderr.strip()[-200:])
            # block(): TCP from a far host dropped except to the listed ports.
            b = far[0]
            self.block(h0, b["addr"], except_ports=[22])
            ok, detail = tcp_connect(b, h0["addr"], port, timeout=1.5)
            check(f"block(h0, {b['addr']}): {b['name']} -> {h0['addr']}:{port} dropped",
                  not ok, detail)
            self.unblock(h0)
            self.block(h0, b["addr"], except_ports=[22, port])
            ok, detail = tcp_connect(b, h0["addr"], port, timeout=1.5)
            check(f"block(h0, {b['addr']}, except {port}): still reaches {port}", ok, detail)
            self.unblock(h0)
        finally:
            listener.close()
        # mount_small_shm(): a later session sees 64 MiB, the other hosts do not.
        last = self.hosts[-1]
        self.mount_small_shm(last)
        cmd = "/usr/bin/python3 -c \"import os; s = os.statvfs('/dev/shm'); " \
              "print(s.f_blocks * s.f_frsize >> 20)\""
        sizes = {h["name"]: self.ssh(h, cmd).stdout.strip() for h in (h0, last)}
        check(f"mount_small_shm({last['name']}): /dev/shm in its ssh sessions is 64 MiB",
              sizes[last["name"]] == "64" and sizes[h0["name"]] != "64",
              ", ".join(f"{k}={v} MiB" for k, v in sizes.items()))
        return results

    def describe(self):
        lines = [f"namespaces: {', '.join(self.namespaces)}",
                 f"tunnel: vx0 VXLAN id 12 rA 198.18.100.1 <-> rB 198.18.100.5 via "
                 f"{self.inet}, overlay 198.18.200.1/.2, MTU {TUNNEL_MTU}"]
        for h in self.hosts:
            lines.append(f"{h['name']}: region {h['region']} {h['ifname']} {h['addr']}/24, "
                         f"management {h['mgmt_ifname']} {h['mgmt_addr']}/30 "
                         f"(root side {h['root_link']} {h['mgmt_peer']})")
        return "\n".join(lines)


_LIVE = []  # topologies not closed yet, for the SIGTERM handler


def _on_sigterm(*_):
    # Not sys.exit: unittest would catch the SystemExit as a test error and go on.
    for topo in list(_LIVE):
        topo.close()
    os._exit(143)


def _sigterm_exits():
    """SIGTERM (a ctest timeout, a Ctrl-C'd parent) tears the topology down too."""
    if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _on_sigterm)


# -- probes run inside host namespaces ------------------------------------------------
_CONNECT = r"""
import socket, sys
s = socket.socket()
s.settimeout(float(sys.argv[3]))
try:
    s.connect((sys.argv[1], int(sys.argv[2])))
    print("connected")
except OSError as e:
    print(type(e).__name__, e)
    sys.exit(1)
"""

_SINK = r"""
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2])))
s.listen(16)
print("listening", flush=True)
while True:
    c, _ = s.accept()
    c.settimeout(10)
    n = 0
    try:
        while True:
            b = c.recv(65536)
            if not b:
                break
            n += len(b)
        c.sendall(str(n).encode())
    except OSError:
        pass
    c.close()
"""

_BULK = r"""
import socket, sys
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5)
s.settimeout(10)
s.sendall(b"x" * int(sys.argv[3]))
s.shutdown(socket.SHUT_WR)
print(s.recv(64).decode())
"""

# Sends a 1500-byte datagram with DF set until the router's "fragmentation
# needed" arrives, then prints the path MTU the kernel learnt.
_PMTU = r"""
import errno, socket, sys, time
IP_MTU_DISCOVER, IP_PMTUDISC_DO, IP_MTU = 10, 2, 14
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.IPPROTO_IP, IP_MTU_DISCOVER, IP_PMTUDISC_DO)
s.connect((sys.argv[1], 9))
for _ in range(50):
    try:
        s.send(b"x" * 1472)
    except OSError as e:
        if e.errno != errno.EMSGSIZE:
            raise
        break
    time.sleep(0.02)
print(s.getsockopt(socket.IPPROTO_IP, IP_MTU))
"""


def tcp_connect(h, addr, port, timeout=2.0):
    """TCP connect from host `h`'s namespace (None: the root namespace); (ok, detail)."""
    cmd = ["/usr/bin/python3", "-c", _CONNECT, addr, str(port), str(timeout)]
    if h is not None:
        cmd = ["ip", "netns", "exec", h["ns"]] + cmd
    r = sh(*cmd, check=False, timeout=timeout + 10)
    return r.returncode == 0, (r.stdout + r.stderr).strip()


class TcpSink:
    """A listener in a host's namespace that counts the bytes of each connection."""

    def __init__(self, topo, h, port):
        self.proc = subprocess.Popen(
            ["ip", "netns", "exec", h["ns"], "/usr/bin/python3", "-c", _SINK, h["addr"],
             str(port)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            start_new_session=True)
        line = self.proc.stdout.readline()
        if "listening" not in line:
            self.close()
            raise RuntimeError(f"listener on {h['addr']}:{port} did not start: {line}")

    def close(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.communicate()


def tcp_bulk(topo, h, addr, port, nbytes):
    r = topo.run(h, ["/usr/bin/python3", "-c", _BULK, addr, str(port), str(nbytes)],
                 timeout=30)
    got = r.stdout.strip()
    return got == str(nbytes), f"echoed {got or r.stderr.strip()[-200:]} bytes"


def path_mtu(topo, h, addr):
    r = topo.run(h, ["/usr/bin/python3", "-c", _PMTU, addr], timeout=20)
    try:
        return int(r.stdout.strip())
    except ValueError:
        return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--selfcheck", action="store_true", help="build, prove, tear down")
    parser.add_argument("--hosts", type=int, default=2,
                        help="hosts: h0 in region A, the rest in region B (default 2)")
    args = parser.parse_args()
    if not args.selfcheck:
        parser.print_help()
        return 2
    require_topology()
    spec = [("h0", "A")] + [(f"h{i}", "B") for i in range(1, args.hosts)]
    start = time.monotonic()
    with Topology(spec) as topo:
        built = time.monotonic() - start
        print(topo.describe())
        results = topo.selfcheck()
        for what, ok, detail in results:
            print(f"  {'ok  ' if ok else 'FAIL'} {what}" + (f"  [{detail}]" if detail else ""))
    failed = [r for r in results if not r[1]]
    print(f"{len(results) - len(failed)}/{len(results)} checks passed; built in {built:.1f} s, "
          f"total {time.monotonic() - start:.1f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
