#!/usr/bin/python3
"""A stand-in for Slurm's srun that runs a dlaunch job step's agents on this
machine, for tests of thousands of "nodes" where a real cluster cannot be
had. dlaunch runs it as its srun (a link named srun, first on PATH), with
the command line of launcher/transport/srun_argv.h:

    fake_srun.py --nodes=N ... --nodelist=a,b,... --label ... <agent> --slurm

What it does as srun does, for the dlaunch agents' step:
  - one task per node of --nodelist, its agent run with SLURMD_NODENAME set to
    the node's name; the task's stdin carries its launch spec (read from this
    process's stdin in node order, as the Slurm transport writes them) and
    stays open until this process's stdin ends, which tells the agents to stop;
  - the tasks' stdout and stderr are this process's stdout (unlabelled: the
    transport then shows them as srun's own lines);
  - a task that exits non-zero gets srun's line, "srun: error: <node>: task
    <i>: Exited with exit code <c>" (or the signal's name), at once;
  - SIGTERM or SIGINT kills every task, as srun's SIGKILL to the step does;
  - the step ends when its tasks have, whether or not stdin has.
Exits 0 when every task did, else 1.

A coordinator limited to 1,024 files passes that limit on to its srun, which
could then not hold a pipe per task; without the privilege to raise it, the
test starts `fake_srun.py --serve SOCKET` beforehand with a limit of its own,
and the srun that dlaunch runs (with FAKE_SRUN_SOCKET=SOCKET) hands its stdin,
stdout, command line and environment to that server, passes SIGTERM on, and
exits with the step's code.

Unlike srun each task gets only its own spec, not the whole stream: the agent
takes the first spec that names it either way, and N copies of N specs would
be quadratic in the node count."""

import json
import os
import selectors
import signal
import socket
import struct
import sys

SPEC_HEADER = struct.Struct(">II")  # magic "DLSP", body length (protocol/launch_spec.cpp)
SPEC_MAGIC = 0x444C5350


class Step:
    """One job step: a task per node, run to its end on one thread. Each task
    is watched through a pidfd, so its end is seen (and its line written) the
    moment it comes, whatever the others do."""

    def __init__(self, argv, env, stdin_fd, stdout_fd):
        self.nodes, self.command = parse_argv(argv)
        self.env = env
        self.stdin_fd = stdin_fd
        self.stdout_fd = stdout_fd
        self.tasks = {}  # pidfd -> (pid, task index, node)
        self.writers = []  # each task's stdin, open until this stdin ends
        self.failed = False

    def spawn(self, index, spec):
        node = self.nodes[index]
        env = dict(self.env, SLURMD_NODENAME=node, SLURM_PROCID=str(index),
                   SLURM_NODEID=str(index), SLURM_NTASKS=str(len(self.nodes)))
        read_end, write_end = os.pipe()
        pid = os.posix_spawn(self.command[0], self.command, env,
                             file_actions=[(os.POSIX_SPAWN_DUP2, read_end, 0),
                                           (os.POSIX_SPAWN_DUP2, self.stdout_fd, 1),
                                           (os.POSIX_SPAWN_DUP2, self.stdout_fd, 2)])
        os.close(read_end)
        os.write(write_end, spec)  # a spec is far below a pipe's 64 KiB
        self.writers.append(write_end)
        pidfd = os.pidfd_open(pid)
        self.tasks[pidfd] = (pid, index, node)
        return pidfd

    def ended(self, pidfd):
        pid, index, node = self.tasks.pop(pidfd)
        os.close(pidfd)
        code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
        if code == 0:
            return
        self.failed = True
        why = (f"Exited with exit code {code}" if code > 0
               else signal.strsignal(-code) or f"signal {-code}")
        try:
            os.write(self.stdout_fd, f"srun: error: {node}: task {index}: {why}\n".encode())
        except BrokenPipeError:
            pass  # dlaunch has stopped reading

    def kill(self):
        for pidfd in self.tasks:
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)

    def run(self, kill_fd=None):
        """Until every task has ended, as srun's step does, whether or not
        stdin has. Readable `kill_fd`: kill every task."""
        events = selectors.DefaultSelector()
        events.register(self.stdin_fd, selectors.EVENT_READ, "stdin")
        if kill_fd is not None:
            events.register(kill_fd, selectors.EVENT_READ, "kill")
        pending = b""
        started = 0
        while started < len(self.nodes) or self.tasks:
            for key, _ in events.select():
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
                        events.register(self.spawn(started, spec), selectors.EVENT_READ, "task")
                        started += 1
                elif key.data == "kill":
                    events.unregister(kill_fd)
                    self.kill()
                else:
                    events.unregister(key.fd)
                    self.ended(key.fd)
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
    nodes, command = None, None
    for i, arg in enumerate(argv):
        if arg.startswith("--nodelist="):
            nodes = arg.split("=", 1)[1].split(",")
        elif not arg.startswith("-"):
            command = argv[i:]
            break
    if not nodes or not command:
        sys.exit("fake_srun: needs --nodelist=... and a command")
    return nodes, command


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
