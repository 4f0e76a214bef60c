"""A minimal, independent Python encoder for dlaunch's rendezvous frames, used
by tests that act as hostile or broken peers."""

import hashlib
import hmac
import os
import re
import socket
import struct

MAGIC = 0x444C5256


def _protocol_version():
    """kVersion as protocol/messages.h defines it: the version a peer of this
    release speaks (another one is refused before anything else is read)."""
    header = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "protocol",
                          "messages.h")
    with open(header) as f:
        return int(re.search(r"kVersion = (\d+);", f.read()).group(1))


VERSION = _protocol_version()
HELLO, CHALLENGE, JOIN, WELCOME, ASSIGN, LOG_LINE, RANK_EXIT = 1, 2, 3, 4, 5, 6, 7


def frame(msg_type, payload):
    return struct.pack(">IB", len(payload) + 1, msg_type) + payload


def string(b):
    return struct.pack(">I", len(b)) + b


def hello(nonce=None, version=VERSION, magic=MAGIC):
    return frame(HELLO, struct.pack(">IH", magic, version) + string(nonce or os.urandom(32)))


def join(proof, node_rank=0, nproc=1, host=b"intruder", port=1234, nnodes=0):
    return join_full(proof, node_rank, nproc, host=host, master_port=port, nnodes=nnodes)


# How a LogLine's text ended (protocol/messages.h, LineEnd).
NEWLINE, CARRIAGE_RETURN, CONTINUED, PARTIAL = 0, 1, 2, 3


def log_line(rank, text, end=NEWLINE):
    return frame(LOG_LINE, struct.pack(">iB", rank, 1) + string(text) + struct.pack(">B", end))


def rank_exit(rank, code):
    return frame(RANK_EXIT, struct.pack(">iii", rank, code, 0) + string(b""))


def read_frame(sock, timeout=5.0):
    """Returns (type, payload), or None when the peer closed."""
    sock.settimeout(timeout)
    header = b""
    while len(header) < 5:
        chunk = sock.recv(5 - len(header))
        if not chunk:
            return None
        header += chunk
    length, msg_type = struct.unpack(">IB", header)
    payload = b""
    while len(payload) < length - 1:
        chunk = sock.recv(length - 1 - len(payload))
        if not chunk:
            return None
        payload += chunk
    return msg_type, payload


def connect(port, host="127.0.0.1", timeout=5.0):
    return socket.create_connection((host, port), timeout=timeout)


# --- The agent's side of the protocol, for load generators that act as many
# agents at once over non-blocking sockets. Additions only: the helpers above
# keep their behaviour for the tests that use them.

AGENT_DONE, STOP, HEARTBEAT, REJECT, PROBE, PROBE_REPORT = 8, 9, 10, 11, 12, 13
NONCE_SIZE = 32
HEADER = struct.Struct(">IB")
# Frames the coordinator may send once the peer has joined (frame.h's kMaxFrame).
MAX_FRAME = 1024 * 1024


def read_secret_file(path):
    """The job's secret as dlaunch reads it (launcher/config/secret.cpp): the
    file's bytes without trailing white space."""
    with open(path, "rb") as f:
        return f.read().rstrip(b" \t\n\r\x0b\x0c")


def join_proof(secret, server_nonce, agent_nonce):
    """protocol/auth.cpp: HMAC-SHA256(secret, "dlaunch join v1|" server "|" agent)."""
    return hmac.new(secret, b"dlaunch join v1|" + server_nonce + b"|" + agent_nonce,
                    hashlib.sha256).digest()


def welcome_proof(secret, server_nonce, agent_nonce):
    """protocol/auth.cpp: HMAC-SHA256(secret, "dlaunch welcome v1|" agent "|" server)."""
    return hmac.new(secret, b"dlaunch welcome v1|" + agent_nonce + b"|" + server_nonce,
                    hashlib.sha256).digest()


def join_full(proof, node_rank, nproc=1, gpus=0, host=b"load", master_port=0, pid=None,
              nnodes=0, probe_port=0, interfaces=(), machine_id=b""):
    """A Join with every field chosen by the caller (protocol/messages.cpp).
    `interfaces`: (name, kind, mtu, up, [(address, prefix, ipv6)]) tuples."""
    body = (string(proof) + struct.pack(">iii", node_rank, nproc, gpus) + string(host)
            + struct.pack(">iqii", master_port, os.getpid() if pid is None else pid, nnodes,
                          probe_port)
            + struct.pack(">I", len(interfaces)))
    for name, kind, mtu, up, addresses in interfaces:
        body += string(name) + struct.pack(">BiBI", kind, mtu, 1 if up else 0, len(addresses))
        for address, prefix, ipv6 in addresses:
            body += string(address) + struct.pack(">BB", prefix, 1 if ipv6 else 0)
    return frame(JOIN, body + string(machine_id))


def probe_report(outcomes):
    """`outcomes`: (reached, rtt_us, interface, error) per probed address."""
    body = struct.pack(">I", len(outcomes))
    for reached, rtt_us, interface, error in outcomes:
        body += struct.pack(">Bi", 1 if reached else 0, rtt_us) + string(interface) + string(error)
    return frame(PROBE_REPORT, body)


def agent_done(round_, next_master_port=0):
    return frame(AGENT_DONE, struct.pack(">ii", round_, next_master_port))


def heartbeat():
    return frame(HEARTBEAT, b"")


class _Reader:
    def __init__(self, payload):
        self.data = payload
        self.pos = 0

    def take(self, n):
        if len(self.data) - self.pos < n:
            raise ValueError("truncated payload")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def unpack(self, fmt):
        s = struct.Struct(fmt)
        return s.unpack(self.take(s.size))

    def string(self, limit):
        (n,) = self.unpack(">I")
        if n > limit:
            raise ValueError("string longer than its limit")
        return bytes(self.take(n))

    def done(self):
        if self.pos != len(self.data):
            raise ValueError("trailing bytes in payload")


def parse_challenge(payload):
    """(magic, version, server_nonce); ValueError when malformed."""
    r = _Reader(payload)
    magic, version = r.unpack(">IH")
    nonce = r.string(NONCE_SIZE)
    r.done()
    return magic, version, nonce


def parse_welcome(payload):
    r = _Reader(payload)
    proof = r.string(64)
    r.done()
    return proof


def parse_assign(payload):
    """The Assign's fields as a dict; ValueError when malformed."""
    r = _Reader(payload)
    job = r.string(1024)
    (round_, max_restarts, node_rank, nnodes, rank_offset, local_world_size,
     world_size) = r.unpack(">iiiiiii")
    master_addr = r.string(255)
    (master_port,) = r.unpack(">i")
    socket_ifname = r.string(15)
    r.done()
    return {"job": job.decode(errors="replace"), "round": round_, "max_restarts": max_restarts,
            "node_rank": node_rank, "nnodes": nnodes, "rank_offset": rank_offset,
            "local_world_size": local_world_size, "world_size": world_size,
            "master_addr": master_addr.decode(errors="replace"), "master_port": master_port,
            "socket_ifname": socket_ifname.decode(errors="replace")}


def parse_probe(payload):
    """{port, timeout_ms, addresses}; ValueError when malformed."""
    r = _Reader(payload)
    port, timeout_ms = r.unpack(">ii")
    (count,) = r.unpack(">I")
    addresses = [r.string(255).decode() for _ in range(count)]
    r.done()
    return {"port": port, "timeout_ms": timeout_ms, "addresses": addresses}


def parse_stop(payload):
    r = _Reader(payload)
    exit_code, restart, grace_s = r.unpack(">iBi")
    reason = r.string(4096)
    r.done()
    return {"exit_code": exit_code, "restart": restart == 1, "grace_s": grace_s,
            "reason": reason.decode(errors="replace")}


def parse_reject(payload):
    r = _Reader(payload)
    reason = r.string(4096)
    r.done()
    return reason.decode(errors="replace")


class FrameBuffer:
    """Incremental frame decoder for non-blocking sockets: feed() what recv()
    returned, then frames() yields every whole (type, payload) buffered."""

    def __init__(self, max_frame=MAX_FRAME):
        self.buf = bytearray()
        self.max_frame = max_frame

    def feed(self, data):
        self.buf += data

    def frames(self):
        """Whole frames in order; ValueError on a length outside the limits."""
        out = []
        buf = self.buf
        pos = 0
        while len(buf) - pos >= 5:
            length, msg_type = HEADER.unpack_from(buf, pos)
            if length < 1 or length > self.max_frame:
                raise ValueError(f"frame length {length} outside 1..{self.max_frame}")
            if len(buf) - pos - 4 < length:
                break
            out.append((msg_type, bytes(buf[pos + 5:pos + 4 + length])))
            pos += 4 + length
        if pos:
            del buf[:pos]
        return out
