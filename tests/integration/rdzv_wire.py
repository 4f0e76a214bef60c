"""A minimal, independent Python encoder for dlaunch's rendezvous frames, used
by tests that act as hostile or broken peers."""

import os
import socket
import struct

MAGIC = 0x444C5256
VERSION = 1
HELLO, CHALLENGE, JOIN, WELCOME, ASSIGN, LOG_LINE, RANK_EXIT = 1, 2, 3, 4, 5, 6, 7


def frame(msg_type, payload):
    return struct.pack(">IB", len(payload) + 1, msg_type) + payload


def string(b):
    return struct.pack(">I", len(b)) + b


def hello(nonce=None, version=VERSION, magic=MAGIC):
    return frame(HELLO, struct.pack(">IH", magic, version) + string(nonce or os.urandom(32)))


def join(proof, node_rank=0, nproc=1, host=b"intruder", port=1234):
    return frame(JOIN, string(proof) + struct.pack(">iii", node_rank, nproc, 0) + string(host)
                 + struct.pack(">iq", port, os.getpid()))


def log_line(rank, text):
    return frame(LOG_LINE, struct.pack(">iB", rank, 1) + string(text))


def rank_exit(rank, code):
    return frame(RANK_EXIT, struct.pack(">iii", rank, code, 0))


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
