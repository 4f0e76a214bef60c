"""Helpers for the mnist_dist tests: starting ranks by hand with the
torchrun-style environment, reading --dump-weights files, and decoding
TensorBoard event files with our own CRC32C and protobuf reader, so that the
tests check the trainer's writer against an independent implementation."""

import array
import os
import re
import struct
import subprocess

import harness

MNIST = os.path.join(harness.BIN_DIR, "mnist_dist")
PARAMETERS = 431080  # conv1 520 + conv2 25050 + fc1 400500 + fc2 5010
TRAIN_LINE = re.compile(r"Train Epoch: (\d+) \[(\d+)/(\d+) \(\d+%\)\]\tloss=([0-9.]+)")


def require_mnist():
    """Exit with the skip code when mnist_dist was not built (no LibTorch)."""
    if not os.access(MNIST, os.X_OK):
        harness.skip_file(f"not built: {MNIST} (needs LibTorch: libtorch-dev libgloo-dev)")


def start_ranks(world, args, port, env=None):
    """Starts `world` mnist_dist processes with RANK/WORLD_SIZE/LOCAL_RANK/
    MASTER_ADDR/MASTER_PORT set by hand, as torchrun would on one machine.
    `args` is a list, or a function of the rank returning one."""
    procs = []
    for rank in range(world):
        rank_args = args(rank) if callable(args) else args
        rank_env = dict(env or os.environ, RANK=str(rank), WORLD_SIZE=str(world),
                        LOCAL_RANK=str(rank), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                        OMP_NUM_THREADS="1")
        procs.append(subprocess.Popen([MNIST, *rank_args], env=rank_env, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))
    return procs


def read_weights(path):
    """The raw float32 parameters that --dump-weights writes."""
    weights = array.array("f")
    with open(path, "rb") as f:
        weights.frombytes(f.read())
    return weights


def losses(stdout):
    return [float(m.group(4)) for m in TRAIN_LINE.finditer(stdout)]


def accuracies(stdout):
    return [float(m) for m in re.findall(r"accuracy=([0-9.]+)", stdout)]


def crc32c(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
    return crc ^ 0xFFFFFFFF


def masked_crc32c(data):
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def _varint(buf, at):
    value = shift = 0
    while True:
        byte = buf[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, at


def _fields(buf):
    """Yields (field number, value) of a protobuf message."""
    at = 0
    while at < len(buf):
        key, at = _varint(buf, at)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, at = _varint(buf, at)
        elif wire == 1:
            value, at = buf[at:at + 8], at + 8
        elif wire == 5:
            value, at = buf[at:at + 4], at + 4
        elif wire == 2:
            n, at = _varint(buf, at)
            value, at = buf[at:at + n], at + n
        else:
            raise ValueError(f"unexpected wire type {wire}")
        if at > len(buf):
            raise ValueError("field runs past the end of its message")
        yield number, value


class BadRecord(Exception):
    pass


def read_events(path):
    """Decodes a TFRecord event file, checking both CRCs of every record.
    Returns [{"wall_time", "step", "file_version"?, "scalars": {tag: value}}]."""
    with open(path, "rb") as f:
        data = f.read()
    events, at = [], 0
    while at < len(data):
        if at + 12 > len(data):
            raise BadRecord(f"truncated record header at byte {at}")
        header = data[at:at + 8]
        (length,) = struct.unpack("<Q", header)
        (header_crc,) = struct.unpack("<I", data[at + 8:at + 12])
        if header_crc != masked_crc32c(header):
            raise BadRecord(f"bad length CRC at byte {at}")
        if at + 16 + length > len(data):
            raise BadRecord(f"truncated record at byte {at}")
        body = data[at + 12:at + 12 + length]
        (body_crc,) = struct.unpack("<I", data[at + 12 + length:at + 16 + length])
        if body_crc != masked_crc32c(body):
            raise BadRecord(f"bad data CRC at byte {at}")
        at += 16 + length
        # Event: wall_time=1 double, step=2 int64, file_version=3 string, summary=5
        event = {"scalars": {}}
        for number, value in _fields(body):
            if number == 1:
                event["wall_time"] = struct.unpack("<d", value)[0]
            elif number == 2:
                event["step"] = value
            elif number == 3:
                event["file_version"] = value.decode()
            elif number == 5:
                for _, summary_value in _fields(value):  # Summary.value = 1
                    parts = dict(_fields(summary_value))  # tag = 1, simple_value = 2
                    event["scalars"][parts[1].decode()] = struct.unpack("<f", parts[2])[0]
        events.append(event)
    return events
