#!/usr/bin/env python3
"""A load generator for dlaunch's rendezvous: it acts as nodes 1..N-1 of a
manual-mode job (node 0 being a real `dlaunch --nnodes N --node-rank 0`),
speaking the real protocol with the real HMAC handshake:

    Hello -> Challenge -> Join(proof) -> Welcome (its proof checked) -> Assign
    -> RankExit per assigned rank -> AgentDone -> Stop -> close

Many agents share one process over non-blocking sockets (selectors), and the
nodes are spread over several processes (--procs). A connection that fails or
closes before Welcome is retried with dlaunch-agent's backoff (50 ms doubling
up to 2 s); joined agents send a Heartbeat when idle.

Used as a library by the scale test and the benchmark (`Load`), or by hand:

    rdzv_load.py --port P --secret-file F --nnodes N [--procs K] [--fail-node I]

It prints one JSON summary of every agent's outcome on stdout."""

import argparse
import errno
import heapq
import json
import os
import random
import resource
import selectors
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rdzv_wire as wire  # noqa: E402

# dlaunch-agent's reconnect backoff (rendezvous/client.{h,cpp}).
BACKOFF_FIRST = 0.05
BACKOFF_MAX = 2.0
# Joined agents send a Heartbeat after this long without sending; the
# coordinator's receive timeout is 15 s by default.
HEARTBEAT_IDLE = 4.0

# Agent states.
WAITING, CONNECTING, CHALLENGE, WELCOME, JOINED, DONE = range(6)


def is_probe_scout(node, nodes):
    """net/probe_scouts.h: 64 nodes spread over the list from 256 nodes on."""
    if nodes < 256 or node >= nodes:
        return False
    k = (node * 63 + nodes - 2) // (nodes - 1)
    return k < 64 and k * (nodes - 1) // 63 == node


def raise_fd_limit():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


class Agent:
    __slots__ = ("node", "sock", "state", "frames", "out", "nonce", "server_nonce", "backoff",
                 "attempts", "last_send", "assign", "stop", "outcome", "registered")

    def __init__(self, node):
        self.node = node
        self.sock = None
        self.state = WAITING
        self.frames = None
        self.out = b""
        self.nonce = b""
        self.server_nonce = b""
        self.backoff = BACKOFF_FIRST
        self.attempts = 0
        self.last_send = 0.0
        self.assign = None
        self.stop = None
        self.outcome = None
        self.registered = 0


class Worker:
    """One process's share of the agents and its event loop."""

    def __init__(self, args, nodes):
        self.a = args
        self.secret = wire.read_secret_file(args.secret_file)
        self.addr = (args.host, args.port)
        self.sel = selectors.DefaultSelector()
        self.agents = [Agent(n) for n in nodes]
        self.timers = []
        self.seq = 0
        self.active = len(self.agents)
        self.deadline = time.monotonic() + args.timeout
        self.closing_all = False
        self.close_all_pending = False
        self.assigned = 0
        self.holds_failure = args.close_all_on_stop and args.fail_node in nodes
        self.stats = {"connect_errors": 0, "closed_before_welcome": 0, "heartbeats_sent": 0}
        self.errors = []
        self.times = {"first_welcome": None, "last_welcome": None, "first_probe": None,
                      "last_probe": None, "first_assign": None, "last_assign": None,
                      "first_stop": None, "last_stop": None}
        self.rng = random.Random(args.seed * 1000003 + (nodes[0] if nodes else 0))

    # --- timers ---------------------------------------------------------
    def at(self, when, agent):
        self.seq += 1
        heapq.heappush(self.timers, (when, self.seq, agent))

    # --- per-agent actions ----------------------------------------------
    def finish(self, agent, outcome, error=None):
        if agent.state == DONE:
            return
        self.drop_socket(agent)
        agent.state = DONE
        agent.outcome = outcome
        self.active -= 1
        if error and len(self.errors) < 20:
            self.errors.append(f"node {agent.node}: {error}")

    def drop_socket(self, agent):
        if agent.sock is not None:
            if agent.registered:
                self.sel.unregister(agent.sock)
                agent.registered = 0
            agent.sock.close()
            agent.sock = None
        agent.out = b""

    def connect(self, agent):
        if agent.state != WAITING:
            return
        agent.attempts += 1
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        agent.sock = s
        try:
            err = s.connect_ex(self.addr)
        except OSError as e:
            err = e.errno
        if err not in (0, errno.EINPROGRESS):
            self.stats["connect_errors"] += 1
            return self.retry(agent, os.strerror(err))
        agent.state = CONNECTING
        agent.registered = selectors.EVENT_WRITE
        self.sel.register(s, selectors.EVENT_WRITE, agent)

    def retry(self, agent, why):
        """A connection that failed or closed before Welcome: try again later,
        as dlaunch-agent does, until the overall timeout."""
        self.drop_socket(agent)
        now = time.monotonic()
        if now >= self.deadline:
            return self.finish(agent, "gave_up", why)
        agent.state = WAITING
        wait = min(agent.backoff, self.deadline - now)
        agent.backoff = min(agent.backoff * 2, BACKOFF_MAX)
        self.at(now + wait, agent)

    def send(self, agent, data):
        if agent.out:
            agent.out += data
            return
        try:
            n = agent.sock.send(data)
        except BlockingIOError:
            n = 0
        except OSError as e:
            return self.closed(agent, f"send: {e.strerror}")
        agent.last_send = time.monotonic()
        if n < len(data):
            agent.out = data[n:]
            self.want(agent, selectors.EVENT_READ | selectors.EVENT_WRITE)

    def want(self, agent, events):
        if agent.registered != events:
            self.sel.modify(agent.sock, events, agent)
            agent.registered = events

    def on_connected(self, agent):
        err = agent.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        if err:
            self.stats["connect_errors"] += 1
            return self.retry(agent, os.strerror(err))
        agent.state = CHALLENGE
        agent.frames = wire.FrameBuffer(wire.MAX_FRAME)
        agent.nonce = os.urandom(wire.NONCE_SIZE)
        self.want(agent, selectors.EVENT_READ)
        self.send(agent, wire.hello(agent.nonce))

    def closed(self, agent, why):
        if agent.state == DONE:
            return
        if agent.state in (CONNECTING, CHALLENGE, WELCOME):
            # Node 0 may be evicting half-open handshakes or not listening yet.
            self.stats["closed_before_welcome"] += 1
            return self.retry(agent, why)
        if agent.stop is not None:
            return self.finish(agent, "stopped")
        self.finish(agent, "lost", f"lost the coordinator after joining: {why}")

    def on_readable(self, agent):
        try:
            data = agent.sock.recv(65536)
        except BlockingIOError:
            return
        except OSError as e:
            return self.closed(agent, e.strerror)
        if not data:
            return self.closed(agent, "connection closed by peer")
        agent.frames.feed(data)
        try:
            frames = agent.frames.frames()
        except ValueError as e:
            return self.finish(agent, "protocol_error", str(e))
        for msg_type, payload in frames:
            if agent.state == DONE or agent.sock is None:
                return
            try:
                self.on_frame(agent, msg_type, payload)
            except ValueError as e:
                return self.finish(agent, "protocol_error", f"type {msg_type}: {e}")

    def on_frame(self, agent, msg_type, payload):
        now = time.time()
        if msg_type == wire.REJECT:
            return self.finish(agent, "rejected", wire.parse_reject(payload))
        if agent.state == CHALLENGE:
            if msg_type != wire.CHALLENGE:
                return self.finish(agent, "protocol_error", f"expected challenge, got {msg_type}")
            magic, _version, nonce = wire.parse_challenge(payload)
            if magic != wire.MAGIC or len(nonce) != wire.NONCE_SIZE:
                return self.finish(agent, "protocol_error", "bad challenge")
            agent.server_nonce = nonce
            proof = wire.join_proof(self.secret, nonce, agent.nonce)
            agent.state = WELCOME
            return self.send(agent, wire.join_full(proof, agent.node, self.a.nproc,
                                                   host=b"load-%d" % agent.node))
        if agent.state == WELCOME:
            if msg_type != wire.WELCOME:
                return self.finish(agent, "protocol_error", f"expected welcome, got {msg_type}")
            proof = wire.parse_welcome(payload)
            if proof != wire.welcome_proof(self.secret, agent.server_nonce, agent.nonce):
                return self.finish(agent, "bad_welcome_proof", "the coordinator's proof is wrong")
            agent.state = JOINED
            if self.times["first_welcome"] is None:
                self.times["first_welcome"] = now
            self.times["last_welcome"] = now
            return
        # Joined.
        if msg_type == wire.ASSIGN:
            agent.assign = wire.parse_assign(payload)
            if self.times["first_assign"] is None:
                self.times["first_assign"] = now
            self.times["last_assign"] = now
            self.assigned += 1
            if not self.holds_failure:
                self.report_exits(agent)
                if self.close_all_pending and self.assigned == len(self.agents):
                    self.close_all()
                return
            # This process holds the failing node: once every one of its
            # agents has its assignment, the failure goes out, and all of
            # their connections close at the first Stop, while node 0 is
            # still writing Stop to every agent. (Closing them right behind
            # the failure would race it: node 0 could read a close before
            # the failure and rightly report a lost agent first.)
            if self.assigned == len(self.agents):
                failing = next(a for a in self.agents if a.node == self.a.fail_node)
                self.report_exits(failing)
            return
        if msg_type == wire.STOP:
            stop = wire.parse_stop(payload)
            if stop["restart"]:
                return  # our ranks have already exited; the next Assign follows
            agent.stop = stop
            if self.times["first_stop"] is None:
                self.times["first_stop"] = now
            self.times["last_stop"] = now
            if self.a.close_all_on_stop:
                # A failed job: every agent of this process exits at once,
                # while node 0 is still writing Stop to the others. The
                # Assigns node 0 sent before its Stops may still wait unread
                # on other connections: close once they are all taken in.
                self.close_all_pending = True
                if self.assigned == len(self.agents):
                    self.close_all()
            return self.finish(agent, "stopped")
        if msg_type == wire.HEARTBEAT:
            return
        if msg_type == wire.PROBE:
            if self.times["first_probe"] is None:
                self.times["first_probe"] = now
            report = wire.probe_report(self.probe(wire.parse_probe(payload)))
            self.times["last_probe"] = time.time()
            return self.send(agent, report)
        self.finish(agent, "protocol_error", f"unexpected message type {msg_type}")

    def probe(self, probe):
        """A real TCP connect to each of node 0's candidates, as an agent
        makes it: a fresh SYN when one is pending after 200 ms (then 400,
        800 ms...), and an address counts as reached once node 0's agent has
        answered with its byte. Blocking: on loopback a connect completes at
        once, is refused, or has had its SYN dropped by a full accept queue."""
        outcomes = []
        for address in probe["addresses"]:
            started = time.monotonic()
            deadline = started + min(probe["timeout_ms"], 2000) / 1000
            outcome = self.probe_one(address, probe["port"], started, deadline)
            outcomes.append(outcome)
            took_ms = (time.monotonic() - started) * 1000
            self.stats["probe_connects"] = self.stats.get("probe_connects", 0) + 1
            self.stats["probe_connect_ms"] = self.stats.get("probe_connect_ms", 0) + took_ms
            if took_ms > 150:
                self.stats["probe_connects_over_150ms"] = (
                    self.stats.get("probe_connects_over_150ms", 0) + 1)
        return outcomes

    def probe_one(self, address, port, started, deadline):
        wait = 0.2
        while True:
            try:
                s = socket.create_connection(
                    (address, port), timeout=max(0.01, min(wait, deadline - time.monotonic())))
            except socket.timeout as e:
                if time.monotonic() < deadline:
                    self.stats["probe_resends"] = self.stats.get("probe_resends", 0) + 1
                    wait *= 2
                    continue
                return (False, 0, b"", str(e).encode()[:200])
            except OSError as e:
                return (False, 0, b"", str(e).encode()[:200])
            with s:
                try:
                    s.settimeout(max(0.01, deadline - time.monotonic()))
                    s.recv(1)
                except OSError as e:
                    return (False, 0, b"", str(e).encode()[:200])
            return (True, int((time.monotonic() - started) * 1e6), b"", b"")

    def report_exits(self, agent):
        """Every assigned rank's exit (the failing node's first rank with
        --fail-code), then AgentDone."""
        a = agent.assign
        frames = []
        for i in range(a["local_world_size"]):
            code = self.a.fail_code if agent.node == self.a.fail_node and i == 0 else 0
            frames.append(wire.rank_exit(a["rank_offset"] + i, code))
        frames.append(wire.agent_done(a["round"], 0))
        self.send(agent, b"".join(frames))

    def close_all(self, keep=None):
        if self.closing_all:
            return
        self.closing_all = True
        for other in self.agents:
            if other is not keep and other.state != DONE:
                self.finish(other, "stopped" if other.stop else "closed_on_stop")

    # --- the loop -------------------------------------------------------
    def run(self):
        start = time.monotonic()
        for agent in self.agents:
            delay = self.rng.uniform(0, self.a.jitter) if self.a.jitter > 0 else 0
            # As dlaunch-agent: the probe's scouts connect at once (drawn all the
            # same, so that the C++ load draws the same delays for the others).
            if is_probe_scout(agent.node, self.a.nnodes):
                delay = 0
            if delay:
                self.at(start + delay, agent)
            else:
                self.connect(agent)
        next_beat = time.monotonic() + 1.0
        while self.active > 0:
            now = time.monotonic()
            if now >= self.deadline:
                for agent in self.agents:
                    if agent.state != DONE:
                        self.finish(agent, "timeout")
                break
            timeout = min(next_beat, self.deadline) - now
            if self.timers:
                timeout = min(timeout, self.timers[0][0] - now)
            events = self.sel.select(max(0.0, timeout)) if self.sel.get_map() else (
                time.sleep(max(0.0, timeout)) or [])
            for key, mask in events:
                agent = key.data
                if agent.sock is None or agent.state == DONE:
                    continue
                if agent.state == CONNECTING:
                    self.on_connected(agent)
                    continue
                if mask & selectors.EVENT_WRITE and agent.out:
                    data, agent.out = agent.out, b""
                    self.send(agent, data)
                    if not agent.out and agent.sock is not None:
                        self.want(agent, selectors.EVENT_READ)
                if mask & selectors.EVENT_READ and agent.sock is not None:
                    self.on_readable(agent)
            now = time.monotonic()
            while self.timers and self.timers[0][0] <= now:
                _, _, agent = heapq.heappop(self.timers)
                self.connect(agent)
            if now >= next_beat:
                next_beat = now + 1.0
                for agent in self.agents:
                    if agent.state == JOINED and now - agent.last_send >= HEARTBEAT_IDLE:
                        self.stats["heartbeats_sent"] += 1
                        self.send(agent, wire.heartbeat())
        return self.summary()

    def summary(self):
        outcomes = {}
        for agent in self.agents:
            outcomes[agent.outcome] = outcomes.get(agent.outcome, 0) + 1
        stop_codes = {}
        for agent in self.agents:
            if agent.stop is not None:
                key = str(agent.stop["exit_code"])
                stop_codes[key] = stop_codes.get(key, 0) + 1
        return {
            "agents": len(self.agents),
            "outcomes": outcomes,
            "stop_codes": stop_codes,
            "attempts": sum(a.attempts for a in self.agents),
            # [node, rank_offset, local_world_size, world_size, nnodes] per assigned agent
            "assigned": [[a.node, a.assign["rank_offset"], a.assign["local_world_size"],
                          a.assign["world_size"], a.assign["nnodes"]]
                         for a in self.agents if a.assign is not None],
            "stats": self.stats,
            "times": self.times,
            "errors": self.errors,
        }


def merge(summaries):
    """One summary out of the workers' summaries."""
    out = {"agents": 0, "outcomes": {}, "stop_codes": {}, "attempts": 0, "assigned": [],
           "stats": {}, "times": {}, "errors": []}
    for s in summaries:
        out["agents"] += s["agents"]
        out["attempts"] += s["attempts"]
        out["assigned"] += s["assigned"]
        out["errors"] += s["errors"]
        for field in ("outcomes", "stop_codes", "stats"):
            for k, v in s[field].items():
                out[field][k] = out[field].get(k, 0) + v
        for k, v in s["times"].items():
            if v is None:
                continue
            old = out["times"].get(k)
            pick = min if k.startswith("first") else max
            out["times"][k] = v if old is None else pick(old, v)
    out["assigned"].sort()
    return out


def default_procs():
    return max(1, min(8, os.cpu_count() or 1))


class Load:
    """Nodes first_node..nnodes-1 spread over `procs` worker processes."""

    def __init__(self, port, secret_file, nnodes, first_node=1, procs=None, nproc=1,
                 fail_node=-1, fail_code=3, close_all_on_stop=False, jitter=0.0, timeout=120.0,
                 host="127.0.0.1", seed=0, cpus=None):
        # cpus: the CPU set the load processes are pinned to (None: any), so
        # a benchmark can keep the load off node 0's cores.
        self.cpus = cpus
        self.args = [
            "--port", str(port), "--secret-file", secret_file, "--host", host,
            "--nproc", str(nproc), "--fail-node", str(fail_node), "--fail-code", str(fail_code),
            "--jitter", str(jitter), "--timeout", str(timeout), "--seed", str(seed),
        ] + (["--close-all-on-stop"] if close_all_on_stop else [])
        self.nnodes = nnodes
        self.first_node = first_node
        self.procs = max(1, min(procs or default_procs(), nnodes - first_node))
        self.popens = []

    def start(self):
        me = os.path.abspath(__file__)
        for w in range(self.procs):
            self.popens.append(subprocess.Popen(
                [sys.executable, me, "--worker", "--nodes",
                 f"{self.first_node + w}:{self.nnodes}:{self.procs}"] + self.args,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                preexec_fn=(lambda: os.sched_setaffinity(0, self.cpus)) if self.cpus else None))
        return self.popens

    def wait(self, timeout=None):
        """Waits for every worker; the merged summary. A worker that failed adds
        an error, and its agents count as 'worker_failed'."""
        deadline = None if timeout is None else time.monotonic() + timeout
        summaries = []
        for w, p in enumerate(self.popens):
            left = None if deadline is None else max(0.1, deadline - time.monotonic())
            try:
                out, err = p.communicate(timeout=left)
            except subprocess.TimeoutExpired:
                p.kill()
                out, err = p.communicate()
            lines = [l for l in out.splitlines() if l.startswith("{")]
            if p.returncode == 0 and lines:
                summaries.append(json.loads(lines[-1]))
            else:
                count = len(range(self.first_node + w, self.nnodes, self.procs))
                summaries.append({"agents": count, "outcomes": {"worker_failed": count},
                                  "stop_codes": {}, "attempts": 0, "assigned": [], "stats": {},
                                  "times": {}, "errors": [f"load worker {w} exited with "
                                                          f"{p.returncode}: {err[-2000:]}"]})
        return merge(summaries)

    def kill(self):
        for p in self.popens:
            if p.poll() is None:
                p.kill()
            p.communicate()


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--port", type=int, required=True, help="node 0's --rdzv-port")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--secret-file", required=True, help="the file given to node 0")
    ap.add_argument("--nnodes", type=int, help="the job's --nnodes (load acts as 1..N-1)")
    ap.add_argument("--first-node", type=int, default=1)
    ap.add_argument("--procs", type=int, default=default_procs(), help="load processes")
    ap.add_argument("--nproc", type=int, default=1, help="ranks per load agent")
    ap.add_argument("--fail-node", type=int, default=-1,
                    help="this node reports its first rank's exit with --fail-code")
    ap.add_argument("--fail-code", type=int, default=3)
    ap.add_argument("--close-all-on-stop", action="store_true",
                    help="at the first Stop, each load process closes all its connections; "
                    "the one holding --fail-node sends the failure once all its agents are "
                    "assigned and closes all their connections right behind it")
    ap.add_argument("--jitter", type=float, default=0.0,
                    help="seconds of random delay before each agent's first connect")
    ap.add_argument("--timeout", type=float, default=120.0, help="give up after this long")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--nodes", help=argparse.SUPPRESS)  # start:stop:step, for --worker
    args = ap.parse_args(argv)
    if not args.worker and args.nnodes is None:
        ap.error("--nnodes is required")
    return args


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    raise_fd_limit()
    if args.worker:
        start, stop, step = (int(x) for x in args.nodes.split(":"))
        args.nnodes = stop
        summary = Worker(args, list(range(start, stop, step))).run()
        print(json.dumps(summary), flush=True)
        return 0
    load = Load(args.port, args.secret_file, args.nnodes, args.first_node, args.procs,
                args.nproc, args.fail_node, args.fail_code, args.close_all_on_stop, args.jitter,
                args.timeout, args.host, args.seed)
    load.start()
    try:
        summary = load.wait()
    finally:
        load.kill()
    summary["assigned"] = len(summary["assigned"])
    print(json.dumps(summary, indent=1))
    bad = set(summary["outcomes"]) - {"stopped", "closed_on_stop"}
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
