#!/usr/bin/python3
"""A stand-in for Slurm's srun that runs a dlaunch job step's agents on this
machine, for tests of thousands of "nodes" where a real cluster cannot be
had. dlaunch runs it as its srun (a link named srun, first on PATH), with
the command line of launcher/transport/srun_argv.h:

    fake_srun.py --nodes=N ... --nodelist=a,b,... --label ... <agent> --slurm

What it does as srun does, on the points dlaunch relies on (test_slurm.py
runs the same step under the real srun and this one and compares them):
  - one task per node of --nodelist, its agent run with SLURMD_NODENAME set to
    the node's name;
  - --input=all: the task's stdin carries the launch specs (read from this
    process's stdin in node order, as the Slurm transport writes them), the
    task's own among others, and stays open until this process's stdin ends,
    which tells the agents to stop. Unlike srun, a task gets the spec of the
    node before it and then its own, not the whole stream: the agent must
    still pick its own among others, while N copies of N specs would be
    quadratic in the node count;
  - --label: "<task>: " before each line a task writes on stdout or stderr,
    the task id padded to the widest one, as srun writes them; lines of
    srun's own carry no label;
  - a task that exits non-zero gets srun's line, "srun: error: <node>: task
    <i>: Exited with exit code <c>" (or the signal's name), at once, after
    what it wrote (srun may lose a dying task's last stderr lines or pass
    them on later: dlaunch must not count on them);
  - --kill-on-bad-exit=1 (or -K): such a task ends the step, every other
    task sent SIGTERM, then SIGKILL after KillWait, as slurmstepd does;
  - SIGTERM or SIGINT kills every task, as srun's SIGKILL to the step does;
  - the step ends when its tasks have, whether or not stdin has.
Exits 0 when every task did, else 1.

A coordinator limited to 1,024 files passes that limit on to its srun, which
could then not hold pipes per task; without the privilege to raise it, the
test starts `fake_srun.py --serve SOCKET` beforehand with a limit of its own,
and the srun that dlaunch runs (with FAKE_SRUN_SOCKET=SOCKET) hands its stdin,
stdout, command line and environment to that server, passes SIGTERM on, and
exits with the step's code."""

import json
import os
import selectors
import signal
import socket
import struct
import sys
import time

# Slurm's KillWait: seconds between a step's SIGTERM and SIGKILL (test_slurm's
# cluster sets 5; Slurm's default is 30).
KILL_WAIT = 5
SPEC_HEADER = struct.Struct(">II")  # magic "DLSP", body length (protocol/launch_spec.cpp)
SPEC_MAGIC = 0x444C5350


class Step:
    """One job step: a task per node, run to its end on one thread. Each task
    is watched through a pidfd, so its end is seen (and its line written) the
    moment it comes, whatever the others do; its output comes through a pipe
    of its own, labelled line by line."""

    def __init__(self, argv, env, stdin_fd, stdout_fd):
        self.nodes, self.command, self.label, self.kill_on_bad_exit = parse_argv(argv)
        self.width = len(str(len(self.nodes) - 1))
        self.env = env
        self.stdin_fd = stdin_fd
        self.stdout_fd = stdout_fd
        self.tasks = {}    # pidfd -> (pid, task index, node)
        self.outputs = {}  # a task's output pipe -> [task index, bytes of a line not yet whole]
        self.writers = []  # each task's stdin, open until this stdin ends
        self.specs = []
        self.failed = False
        self.kill_at = None  # SIGKILL then, after a --kill-on-bad-exit's SIGTERM

    def write(self, data):
        try:
            os.write(self.stdout_fd, data)
        except BrokenPipeError:
            pass  # dlaunch has stopped reading

    def spawn(self, index, spec, events):
        node = self.nodes[index]
        env = dict(self.env, SLURMD_NODENAME=node, SLURM_PROCID=str(index),
                   SLURM_NODEID=str(index), SLURM_NTASKS=str(len(self.nodes)))
        read_end, write_end = os.pipe()
        out_read, out_write = os.pipe()
        pid = os.posix_spawn(self.command[0], self.command, env,
                             file_actions=[(os.POSIX_SPAWN_DUP2, read_end, 0),
                                           (os.POSIX_SPAWN_DUP2, out_write, 1),
                                           (os.POSIX_SPAWN_DUP2, out_write, 2)])
        os.close(read_end)
        os.close(out_write)
        # The node before's spec, then its own: two specs are far below a
        # pipe's 64 KiB.
        os.write(write_end, (self.specs[index - 1] if index > 0 else b"") + spec)
        self.specs.append(spec)
        self.writers.append(write_end)
        os.set_blocking(out_read, False)
        self.outputs[out_read] = [index, b""]
        events.register(out_read, selectors.EVENT_READ, "output")
        pidfd = os.pidfd_open(pid)
        self.tasks[pidfd] = (pid, index, node)
        events.register(pidfd, selectors.EVENT_READ, "task")

    def labelled(self, index, line):
        return (f"{index:>{self.width}}: ".encode() if self.label else b"") + line

    def read_output(self, fd, events):
        """What the task wrote, as whole labelled lines; at its end, the rest."""
        index, partial = self.outputs[fd]
        while True:
            try:
                data = os.read(fd, 65536)
            except BlockingIOError:
                break
            if not data:
                events.unregister(fd)
                os.close(fd)
                del self.outputs[fd]
                if partial:
                    self.write(self.labelled(index, partial))
                return
            partial += data
            *lines, partial = partial.split(b"\n")
            if lines:
                self.write(b"".join(self.labelled(index, line + b"\n") for line in lines))
        self.outputs[fd][1] = partial

    def ended(self, pidfd, events):
        pid, index, node = self.tasks.pop(pidfd)
        events.unregister(pidfd)
        os.close(pidfd)
        code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
        # Its output first: what it wrote before it ended.
        for fd, (task, _) in list(self.outputs.items()):
            if task == index:
                self.read_output(fd, events)
        if code == 0:
            return
        self.failed = True
        why = (f"Exited with exit code {code}" if code > 0
               else signal.strsignal(-code) or f"signal {-code}")
        self.write(f"srun: error: {node}: task {index}: {why}\n".encode())
        if self.kill_on_bad_exit and self.kill_at is None:
            # As slurmstepd ends a step: SIGTERM, then SIGKILL after KillWait.
            self.kill(signal.SIGTERM)
            self.kill_at = time.monotonic() + KILL_WAIT

    def kill(self, sig=signal.SIGKILL):
        for pidfd in self.tasks:
            signal.pidfd_send_signal(pidfd, sig)

    def run(self, kill_fd=None):
        """Until every task has ended and its output is read, as srun's step
        does, whether or not stdin has. Readable `kill_fd`: kill every task."""
        events = selectors.DefaultSelector()
        events.register(self.stdin_fd, selectors.EVENT_READ, "stdin")
        if kill_fd is not None:
            events.register(kill_fd, selectors.EVENT_READ, "kill")
        pending = b""
        started = 0
        while started < len(self.nodes) or self.tasks or self.outputs:
            timeout = None if self.kill_at is None else max(0, self.kill_at - time.monotonic())
            ready = events.select(timeout)
            if not ready and self.kill_at is not None:
                self.kill()
                self.kill_at = None
            for key, _ in ready:
                if key.data == "stdin":
                    data = os.read(self.stdin_fd, 65536)
                    if not data:  # the end: every agent's stdin ends too
                        events.unregister(self.stdin_fd)
                        for fd in self.writers:
                            os.close(fd)
                        self.writers = []
                        if started < len(self.nodes):  # specs missing: those never start
                            self.failed = True
                            started = len(self.nodes)
                        continue
                    pending += data
                    while started < len(self.nodes):
                        spec, pending = take_spec(pending)
                        if spec is None:
                            break
                        self.spawn(started, spec, events)
                        started += 1
                elif key.data == "kill":
                    events.unregister(kill_fd)
                    self.kill()
                elif key.data == "output":
                    if key.fd in self.outputs:
                        self.read_output(key.fd, events)
                elif key.fd in self.tasks:
                    self.ended(key.fd, events)
        return 1 if self.failed else 0


def take_spec(buffer):
    """The first whole launch spec in `buffer`, and what follows it."""
    if len(buffer) < SPEC_HEADER.size:
        return None, buffer
    magic, length = SPEC_HEADER.unpack_from(buffer)
    if magic != SPEC_MAGIC:
        sys.exit("fake_srun: stdin does not carry dlaunch launch specs")
    end = SPEC_HEADER.size + length
    if len(buffer) < end:
        return None, buffer
    return buffer[:end], buffer[end:]


def parse_argv(argv):
    """The nodes, the command, --label and --kill-on-bad-exit of srun's line."""
    nodes, command, label, kill_on_bad_exit = None, None, False, False
    for i, arg in enumerate(argv):
        if arg.startswith("--nodelist="):
            nodes = arg.split("=", 1)[1].split(",")
        elif arg in ("--label", "-l"):
            label = True
        elif arg in ("-K", "--kill-on-bad-exit") or arg.startswith("--kill-on-bad-exit="):
            kill_on_bad_exit = arg.split("=", 1)[1] != "0" if "=" in arg else True
        elif not arg.startswith("-"):
            command = argv[i:]
            break
    if not nodes or not command:
        sys.exit("fake_srun: needs --nodelist=... and a command")
    return nodes, command, label, kill_on_bad_exit


def serve(path):
    """Runs the steps that srun clients hand over, one at a time, until killed.
    Says "ready" on stdout once it listens, and "step ended with CODE" after
    each step, when all its tasks have ended."""
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(4)
    print("ready", flush=True)
    while True:
        conn, _ = server.accept()
        with conn:
            message, fds, _, _ = socket.recv_fds(conn, 1 << 20, 2)
            request = json.loads(message)
            for fd in fds:
                os.set_inheritable(fd, False)
            # The client's "kill" line (its SIGTERM), or its going away, kills the tasks.
            code = Step(request["argv"], request["env"], fds[0], fds[1]).run(conn.fileno())
            for fd in fds:
                os.close(fd)
            print(f"step ended with {code}", flush=True)  # every task has ended
            try:
                conn.sendall(f"{code}\n".encode())
            except OSError:
                pass


def hand_over(path):
    """As the srun that dlaunch runs: the server runs the step."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(path)
    request = json.dumps({"argv": sys.argv[1:], "env": dict(os.environ)}).encode()
    if len(request) >= 1 << 20:
        sys.exit("fake_srun: command line and environment too large")
    socket.send_fds(conn, [request], [0, 1])
    os.close(0)
    signal.signal(signal.SIGTERM, lambda *_: conn.sendall(b"kill\n"))
    signal.signal(signal.SIGINT, lambda *_: conn.sendall(b"kill\n"))
    reply = b""
    while not reply.endswith(b"\n"):
        chunk = conn.recv(16)
        if not chunk:
            sys.exit("fake_srun: the server went away")
        reply += chunk
    return int(reply)


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--serve":
        return serve(sys.argv[2])
    if os.environ.get("FAKE_SRUN_SOCKET"):
        return hand_over(os.environ["FAKE_SRUN_SOCKET"])
    # Run here: SIGTERM kills the tasks through a pipe the loop watches.
    kill_read, kill_write = os.pipe()
    signal.signal(signal.SIGTERM, lambda *_: os.write(kill_write, b"k"))
    signal.signal(signal.SIGINT, lambda *_: os.write(kill_write, b"k"))
    return Step(sys.argv[1:], dict(os.environ), 0, 1).run(kill_read)


if __name__ == "__main__":
    sys.exit(main())
