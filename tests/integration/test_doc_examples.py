"""Every command the documentation shows, run as written, the way doctests run
a docstring's examples: the ```sh blocks of the README and of the docs pages
that carry the README's examples (DOC_PAGES), the EXAMPLES section of the man
page, the examples that `dlaunch --help` and each command's --help print, and
the `dlaunch` lines of hosts.example.toml's header comment.

The commands are read from those files (and from the help output) when the
test runs, never from a list kept here. Each is classified by its words:
set-up commands (not run: the test command is their proof), one-machine
commands, commands for SSH hosts (run against two sshd test hosts, whose
names and addresses replace the documented ones), manual mode (node 0 in the
background, the other nodes as the docs say to start them) and job commands
by name (run in document order in one state dir; JOB, a placeholder, becomes a
job the test makes). At the end the test prints every example with how it was
run and its result."""

import getpass
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import tomllib
import unittest
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import sshd_harness  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
BIN = os.path.abspath(harness.BIN_DIR)
DLAUNCH = os.path.join(BIN, "dlaunch")
README = "README.md"
# The docs pages that carry examples moved out of the README: their ```sh blocks
# run as the README's do, in this order after the README's. The other pages'
# blocks are not written for this test (a package install, a directory and
# MNIST files that no example makes, a Python fragment, output with no command
# before it); the tests of those features run what they show.
DOC_PAGES = ("docs/torchrun.md", "docs/jobs.md", "docs/failures.md")
MAN_PAGE = "packaging/man/dlaunch.1"
HOSTS_EXAMPLE = "hosts.example.toml"

ACTIVE = {"PENDING", "RUNNING", "RESTARTING", "STALLED"}
FINAL = {"SUCCEEDED", "FAILED", "STOPPED", "LOST", "HUNG"}

# Programs that take over a terminal: their examples run under a pseudo-terminal
# and count as working when they exit 0 or are still running after a while.
INTERACTIVE = {"top", "htop", "watch", "less", "vi", "vim", "nano"}
INTERACTIVE_SECONDS = 15
# `dlaunch ui`, a server: run in the background until its page answers.
SERVER_SECONDS = 30
# A line of rank output on dlaunch's terminal: its prefix, "[0]" or "[host:0]".
RANK_LINE = re.compile(r"^\[(?:[^\]:\s]+:)?\d+\] ", re.MULTILINE)
ANSI_COLOR = re.compile(r"\x1b\[[0-9;]*m")  # a terminal's prefixes are colored

# Jobs that the test makes where the docs name one without making it (the
# placeholder JOB, or a name no earlier example starts): 4 ranks so that
# `-r 3` has a rank 3; the long one is for commands that need a running job.
SHORT_JOB = "--nproc-per-node 4 -- mnist_dist --synthetic 600 --epochs 1"
LONG_JOB = "--nproc-per-node 2 -- mnist_dist --synthetic 6000 --epochs 50"

# What a job command needs of the job it names, by its command word.
JOB_NEEDS = {"get": "exists", "logs": "exists", "stop": "running", "delete": "finished",
             "stacks": "running"}
EXAMPLE_TIMEOUT = 180


class Example:
    def __init__(self, source, text, block, output=False):
        self.source = source  # file:line (or `dlaunch ... --help`:line)
        self.text = text      # as written: continuations joined, trailing comment cut
        self.block = block    # the code block it is in
        self.output = output  # documented output, not a command
        self.files = {}       # files the docs give for it (the README's train.py):
                              # name -> (the ```python block, its text)
        self.kind = ""
        self.how = ""
        self.result = ""
        self.failure = ""     # why it failed, with its output; "" when it did not
        self.handled = False  # run together with an earlier example (manual mode)

    def key(self):
        return " ".join(self.text.split())


# -- reading the examples out of the documentation ---------------------------------

def read(rel):
    with open(os.path.join(ROOT, rel)) as f:
        return f.read()


def strip_comment(line):
    """The line without its trailing comment, where sh sees one: a # that
    starts a word outside quotes."""
    quote, prev, i = None, " ", 0
    while i < len(line):
        c = line[i]
        if quote:
            if c == "\\" and quote == '"':
                i, prev = i + 2, "x"
                continue
            if c == quote:
                quote = None
        elif c == "\\":
            i, prev = i + 2, "x"
            continue
        elif c in "'\"":
            quote = c
        elif c == "#" and prev in " \t;|&()<>":
            return line[:i].rstrip()
        prev = c
        i += 1
    return line.rstrip()


def join_continuations(numbered):
    """[(line number, text)] -> the same with `\\`-newline continuations joined,
    numbered by their first line."""
    out, pending = [], None
    for n, text in numbered:
        start, acc = (pending[0], pending[1] + " " + text.strip()) if pending else (n, text)
        if acc.endswith("\\"):
            pending = (start, acc[:-1].rstrip())
            continue
        pending = None
        out.append((start, acc))
    if pending:
        out.append(pending)
    return out


def commands_of(numbered, file, block):
    examples = []
    for n, text in join_continuations(numbered):
        text = strip_comment(text).strip()
        if text:
            examples.append(Example(f"{file}:{n}", text, block))
    return examples


def output_example(numbered, file, block):
    """A block that starts with `dlaunch:` is what dlaunch prints."""
    text = "\n".join(t for _, t in numbered)
    return Example(f"{file}:{numbered[0][0]}", text, block, output=True)


def markdown_examples(page):
    """Every line of every ```sh block of a Markdown page; a ```python block is
    a file that the next ```sh block runs (named by the first *.py word there);
    a ```text block that starts with `dlaunch:` is the output the block before
    it prints."""
    lines = read(page).splitlines()
    examples, files, i = [], [], 0
    while i < len(lines):
        m = re.match(r"^```(\w*)\s*$", lines[i])
        if not m:
            i += 1
            continue
        j = i + 1
        while j < len(lines) and not lines[j].startswith("```"):
            j += 1
        body = list(enumerate(lines[i + 1:j], i + 2))
        block = f"{page}:{i + 1}"
        if m.group(1) == "sh":
            found = commands_of(body, page, block)
            if files:
                py = [w for e in found for w in words(e.text) if w.endswith(".py")]
                if not py:
                    raise AssertionError(f"{files[0][0]}: a ```python block, but the next ```sh "
                                         f"block ({block}) names no .py file")
                found[0].files[py[0]] = files.pop(0)
            examples += found
        elif m.group(1) == "python":
            files.append((block, "\n".join(t for _, t in body) + "\n"))
        elif body and body[0][1].startswith("dlaunch:"):
            examples.append(output_example(body, page, block))
        i = j + 1
    return examples


def unescape_troff(line):
    for escaped, plain in (("\\-", "-"), ("\\(aq", "'"), ("\\(dq", '"'), ("\\&", ""),
                           ("\\(ti", "~"), ("\\e", "\\")):
        line = line.replace(escaped, plain)
    return line


def man_examples():
    """The .EX/.EE blocks of the EXAMPLES section, un-escaped."""
    lines = read(MAN_PAGE).splitlines()
    examples, in_section, block, start = [], False, None, 0
    for n, line in enumerate(lines, 1):
        if line.startswith(".SH"):
            in_section = line[3:].strip().strip('"') == "EXAMPLES"
        elif in_section and line.startswith(".EX"):
            block, start = [], n
        elif in_section and line.startswith(".EE") and block is not None:
            name = f"{MAN_PAGE}:{start}"
            if block and block[0][1].startswith("dlaunch:"):
                examples.append(output_example(block, MAN_PAGE, name))
            else:
                examples += commands_of(block, MAN_PAGE, name)
            block = None
        elif block is not None and not line.startswith("."):
            block.append((n, unescape_troff(line)))
    return examples


def indented_section(lines, header):
    """(line number, text) of the indented lines under the first line that
    matches `header`, up to a blank or unindented line."""
    out = []
    for i, line in enumerate(lines):
        if re.match(header, line):
            for n in range(i + 1, len(lines)):
                if not lines[n].startswith("  "):
                    break
                out.append((n + 1, lines[n]))
            break
    return out


def help_examples():
    """The examples of `dlaunch --help`, and of `dlaunch COMMAND --help` for
    every command and subcommand that the help lists. A help that prints the
    same examples as one before it is one entry saying so."""
    examples, seen, queue, visited = [], {}, [[]], set()
    while queue:
        cmd = queue.pop(0)
        if tuple(cmd) in visited:
            continue
        visited.add(tuple(cmd))
        r = subprocess.run([DLAUNCH, *cmd, "--help"], capture_output=True, text=True, timeout=30)
        source = " ".join(["dlaunch", *cmd, "--help"])
        if r.returncode != 0:
            raise AssertionError(f"{source} exited {r.returncode}: {r.stderr}")
        lines = r.stdout.splitlines()
        found = []
        for n, line in indented_section(lines, r"^Examples:\s*$"):
            m = re.match(r"^\s+(\S.*?)(?:\s{2,}(\S.*))?$", line)
            found.append(Example(f"{source}:{n}", m.group(1), f"{source}:{n}"))
        if found:
            key = tuple(e.text for e in found)
            if key in seen:
                first = found[0].source.rsplit(":", 1)[1]
                last = found[-1].source.rsplit(":", 1)[1]
                same = Example(f"{source}:{first}-{last}", f"(its {len(found)} examples)",
                               source)
                same.kind = "same"
                same.how = f"the same examples, in the same order, as {seen[key]}"
                examples.append(same)
            else:
                first, last = found[0].source, found[-1].source.rsplit(":", 1)[1]
                seen[key] = f"{first}-{last}"
                examples += found
        # The commands that `dlaunch --help` lists, and the subcommands of those.
        listed = indented_section(lines, r"^Commands\b.*:\s*$") if not cmd else []
        if len(cmd) < 2:
            listed += indented_section(lines, r"^Subcommands:\s*$")
        queue += [cmd + [line.split()[0]] for _, line in listed]
    return examples


def hosts_example_examples():
    """The `dlaunch ...` lines of the comment at the top of hosts.example.toml."""
    examples = []
    for n, line in enumerate(read(HOSTS_EXAMPLE).splitlines(), 1):
        if not line.startswith("#"):
            break
        m = re.match(r"^#\s{2,}(dlaunch\s.*)$", line)  # indented, as code in prose
        if m:
            examples.append(Example(f"{HOSTS_EXAMPLE}:{n}", strip_comment(m.group(1)),
                                    f"{HOSTS_EXAMPLE}:1"))
    return examples


def words(text):
    """The words sh would see (up to the first pipe)."""
    try:
        ws = shlex.split(text)
    except ValueError:
        ws = text.split()
    return ws[:ws.index("|")] if "|" in ws else ws


def option_value(ws, *names):
    for i, w in enumerate(ws):
        for name in names:
            if w == name and i + 1 < len(ws):
                return ws[i + 1]
            if w.startswith(name + "="):
                return w[len(name) + 1:]
    return None


def before_program(ws):
    return ws[:ws.index("--")] if "--" in ws else ws


def command_word(ws, commands):
    """dlaunch's command: `run` unless the first word is one of the others."""
    if not ws or ws[0] != "dlaunch":
        return None
    return ws[1] if len(ws) > 1 and ws[1] in commands else "run"


def classify(ex, commands):
    text, ws = ex.text, words(ex.text)
    opts = before_program(ws)
    if re.match(r"^(sudo\s+)?\./scripts/", text) or (ws and ws[0] in ("cmake", "cpack")):
        return "setup"
    if "--nccl" in opts:
        return "gpu"
    if (ws and ws[0] in ("sbatch", "srun", "salloc")) \
            or option_value(opts, "--launcher") == "slurm":
        return "slurm"
    if command_word(ws, commands) == "run" and any(w == "--nnodes" or w.startswith("--nnodes=")
                                                   for w in opts):
        return "manual"
    hosts = option_value(opts, "--hosts")
    if (hosts and hosts != HOSTS_EXAMPLE) or option_value(opts, "--hostfile") \
            or option_value(opts, "-H", "--host-list"):
        return "ssh"
    if command_word(ws, commands) == "run" and "--" in ws and ws.index("--") + 1 < len(ws) \
            and ws[ws.index("--") + 1] in INTERACTIVE:
        return "interactive"
    if command_word(ws, commands) == "ui":
        return "server"
    return "local"


def job_reference(ws, commands):
    """(job name, what the command needs of it) for a command naming a job."""
    word = command_word(ws, commands)
    if word in JOB_NEEDS and len(ws) > 2 and not ws[2].startswith("-"):
        return ws[2], JOB_NEEDS[word]
    if word == "top" and ws[2:3] == ["job"] and len(ws) > 3 and not ws[3].startswith("-"):
        return ws[3], "running"
    return None


def detached_job(ws, commands):
    """The --name of a detached launch."""
    opts = before_program(ws)
    if command_word(ws, commands) == "run" and ("-d" in opts or "--detach" in opts):
        return option_value(opts, "--name")
    return None


def is_placeholder(name):
    return re.fullmatch(r"[A-Z][A-Z0-9_]*", name) is not None


def tail(path, n=25):
    try:
        with open(path, errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return ""
    return "\n".join("    | " + line for line in lines[-n:])


class Run:
    def __init__(self, proc, out, err, started):
        self.proc, self.out, self.err, self.started = proc, out, err, started
        self.rc = None
        self.timed_out = False
        self.seconds = 0.0

    def stdout(self):
        with open(self.out, errors="replace") as f:
            return f.read()

    def stderr(self):
        with open(self.err, errors="replace") as f:
            return f.read()


class DocExamplesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.commands = cls.command_names()
        cls.examples = (markdown_examples(README)
                        + [ex for page in DOC_PAGES for ex in markdown_examples(page)]
                        + man_examples() + help_examples() + hosts_example_examples())
        for ex in cls.examples:
            if not ex.kind:
                ex.kind = "output" if ex.output else classify(ex, cls.commands)
        cls.tmp = tempfile.mkdtemp(prefix="dlaunch-doc-")
        cls.work = os.path.join(cls.tmp, "work")
        cls.state = os.path.join(cls.tmp, "state")
        cls.logs = os.path.join(cls.tmp, "runs")
        for d in (cls.work, cls.state, cls.logs):
            os.makedirs(d)
        shutil.copy(os.path.join(ROOT, HOSTS_EXAMPLE), cls.work)
        cls.hosts = sshd_harness.SshHosts(2)
        try:
            cls.hosts.__enter__()
            cls.hosts.write_known_hosts()
            cls.set_up_host_names()
        except BaseException:
            cls.hosts.close()
            shutil.rmtree(cls.tmp, ignore_errors=True)
            raise
        cls.env = cls.hosts.env(DLAUNCH_STATE_DIR=cls.state,
                                PATH=f"{BIN}:/usr/bin:{os.environ.get('PATH', '/bin')}")
        for name in ("DLAUNCH_SECRET", "DLAUNCH_SECRET_FILE", "XDG_STATE_HOME", "DLAUNCH_AGENT"):
            cls.env.pop(name, None)
        for name in list(cls.env):
            if name.startswith("SLURM_"):
                del cls.env[name]

    @classmethod
    def tearDownClass(cls):
        try:
            harness.kill_coordinators(cls.state)
            for name in os.listdir(cls.state):
                harness.kill_marker(name)
        finally:
            cls.hosts.close()
            shutil.rmtree(cls.tmp, ignore_errors=True)

    @classmethod
    def command_names(cls):
        r = subprocess.run([DLAUNCH, "--help"], capture_output=True, text=True, timeout=30)
        return {line.split()[0] for _, line in
                indented_section(r.stdout.splitlines(), r"^Commands\b.*:\s*$")}

    @classmethod
    def set_up_host_names(cls):
        """The README's example hosts (gpu1 at 10.0.1.2, ...) become the test
        hosts: their addresses map to the test hosts' addresses, their names
        (and every other host name an SSH example names in -H, --include or
        --exclude) are ~/.ssh/config aliases of the test hosts, and the
        hostfile lists them."""
        text = read(README)
        m = re.search(r"^```toml\n(.*?)^```", text, re.S | re.M)
        if not m or "[[host]]" not in m.group(1):
            raise AssertionError(f"{README}: no ```toml block with the example's [[host]] tables")
        cls.readme_hosts_toml = m.group(1)
        readme_hosts = tomllib.loads(cls.readme_hosts_toml)["host"]
        test_hosts = cls.hosts.hosts
        cls.user = getpass.getuser()
        cls.address_map = {}
        cls.alias = {}  # name -> test host
        cls.hostfile_lines = []
        for i, h in enumerate(readme_hosts):
            t = test_hosts[i % len(test_hosts)]
            cls.address_map[h["address"]] = t["address"]
            cls.alias[h.get("name", h["address"])] = t
            cls.hostfile_lines.append(f"{h.get('name', h['address'])} slots={h.get('slots', 1)}")
        extra = []
        for ex in cls.examples:
            if ex.kind != "ssh":
                continue
            opts = before_program(words(ex.text))
            for name in ("-H", "--host-list", "--include", "--exclude"):
                value = option_value(opts, name)
                for host in re.split(r"[,@]", value or ""):
                    host = host.split(":")[0]
                    if host and host not in cls.alias and host not in extra:
                        extra.append(host)
                        if name in ("--include", "--exclude") and option_value(opts, "--hostfile"):
                            cls.hostfile_lines.append(f"{host} slots=1")
        for i, host in enumerate(extra):
            cls.alias[host] = test_hosts[(len(readme_hosts) + i) % len(test_hosts)]
        config = "".join(f"Host {name}\n  HostName {t['address']}\n  Port {t['port']}\n"
                         f"  User {cls.user}\n" for name, t in cls.alias.items())
        cls.hosts.write_ssh_config(config)
        cls.host_names = ", ".join(f"{name} -> {cls.where(t)}" for name, t in cls.alias.items())

    @staticmethod
    def where(t):
        return t["address"] + (f" port {t['port']}" if t["port"] != 22 else "")

    # -- running commands -----------------------------------------------------------

    def start(self, text, tag, pty=False, env=None):
        self.runs += 1
        out = os.path.join(self.logs, f"{self.runs:03d}-{tag}.out")
        err = os.path.join(self.logs, f"{self.runs:03d}-{tag}.err")
        argv = ["bash", "-o", "pipefail", "-c", text]
        if pty:
            argv = ["script", "-qec", shlex.join(argv), "/dev/null"]
        with open(out, "w") as o, open(err, "w") as e:
            proc = subprocess.Popen(argv, cwd=self.work, env=env or self.env,
                                    stdin=subprocess.DEVNULL, stdout=o, stderr=e,
                                    start_new_session=True)
        self.procs.append(proc)
        return Run(proc, out, err, time.monotonic())

    def finish(self, run, timeout=EXAMPLE_TIMEOUT):
        try:
            run.rc = run.proc.wait(timeout=max(0.1, timeout - (time.monotonic() - run.started)))
        except subprocess.TimeoutExpired:
            run.timed_out = True
            harness.kill_process_groups([run.proc])
            run.rc = run.proc.returncode
        run.seconds = time.monotonic() - run.started
        return run

    def sh(self, text, tag, timeout=EXAMPLE_TIMEOUT, **kwargs):
        return self.finish(self.start(text, tag, **kwargs), timeout)

    def job_status(self, name):
        r = subprocess.run([DLAUNCH, "get", name, "--json"], capture_output=True, text=True,
                           env=self.env, timeout=30)
        if r.returncode != 0:
            return None
        try:
            return json.loads(r.stdout).get("status")
        except ValueError:
            return None

    def wait_status(self, name, wanted, timeout=120):
        """Polls `dlaunch get NAME --json` until the status is one of `wanted`."""
        deadline = time.monotonic() + timeout
        status = self.job_status(name)
        while status not in wanted and time.monotonic() < deadline:
            time.sleep(0.2)
            status = self.job_status(name)
        return status

    def mark_failed(self, ex, why, run=None):
        ex.result = "FAILED: " + why
        text = f"{ex.source}: {ex.text}\n  how it was run: {ex.how}\n  {why}"
        if run:
            text += (f"\n  stdout (end):\n{tail(run.out)}\n  stderr (end):\n{tail(run.err)}")
        ex.failure = text

    def mark_ok(self, ex, what="ok", run=None):
        ex.result = what

    def make_job(self, name, long):
        spec = LONG_JOB if long else SHORT_JOB
        command = f"dlaunch -d --name {name} {spec}"
        run = self.sh(command, f"make-{name}")
        if run.rc != 0:
            raise RuntimeError(f"the test's own `{command}` exited {run.rc}:\n{tail(run.err)}")
        return command

    # -- the examples -------------------------------------------------------------------

    def test_1_every_source_has_examples(self):
        sources = {ex.source.rsplit(":", 1)[0] for ex in self.examples}
        for source in (README, *DOC_PAGES, MAN_PAGE, "dlaunch --help", HOSTS_EXAMPLE):
            self.assertIn(source, sources, f"no examples found in {source}")
        self.assertTrue(any(ex.files for ex in self.examples if ex.source.startswith(README + ":")),
                        "the README's train.py block")

    def test_2_every_example_runs_as_written(self):
        self.runs = 0
        self.procs = []
        self.placeholder_job = None
        self.made_jobs = 0
        self.edited = {}  # host files: how they came to be
        self.doc_jobs = set()  # the names of detached jobs that examples started
        self.printed = {}  # key of a manual node 0 command -> the lines it printed
        done = {}
        started = time.monotonic()
        try:
            for i, ex in enumerate(self.examples):
                if ex.handled or ex.kind == "same":
                    if ex.kind == "same":
                        ex.result = "not run again: ran there"
                    continue
                if ex.kind == "output":
                    self.check_output(i, ex)
                    continue
                if ex.kind in ("setup", "gpu", "slurm"):
                    self.not_run(ex)
                    continue
                if ex.key() in done:
                    first = done[ex.key()]
                    ex.how = f"the same command as {first.source}: run once, there"
                    ex.result = "ok there" if not first.failure else "FAILED there"
                    continue
                done[ex.key()] = ex
                at = time.monotonic()
                try:
                    if ex.kind == "manual":
                        self.run_manual(i, ex)
                    else:
                        self.run_example(i, ex)
                except Exception as e:  # noqa: BLE001 -- reported with the example
                    ex.how = ex.how or f"{ex.kind}: stopped while preparing it"
                    self.mark_failed(ex, f"{type(e).__name__}: {e}")
                ex.result += f" [{time.monotonic() - at:.0f} s]"
        finally:
            harness.kill_process_groups(self.procs)
            harness.kill_coordinators(self.state)
            self.report(time.monotonic() - started)
        failures = [ex.failure for ex in self.examples if ex.failure]
        self.assertFalse(failures, f"{len(failures)} documented example(s) failed:\n\n"
                         + "\n\n".join(failures))

    def not_run(self, ex):
        if ex.kind == "setup":
            if "test.sh" in ex.text:
                why = ("the test command itself, which runs this test: running it here would "
                       "rebuild everything and start this test again")
            elif "cpack" in ex.text or ex.text.startswith("cmake"):
                why = ("the package build, which rebuilds; test_package.py builds and "
                       "installs the .deb")
            else:
                why = ("installs packages, rebuilds and installs into /usr/local: this test runs "
                       "on that build, with build/bin first on PATH in place of the install")
            ex.result = "not run: set-up: " + why
        elif ex.kind == "gpu":
            ex.result = ("not run: --nccl times an NCCL all-reduce across NVIDIA GPUs; this "
                         "machine and its test hosts have none")
        else:
            ex.result = "not run: needs a Slurm cluster: covered by test_slurm.py"
        ex.how = "-"

    def substitute_ssh(self, text):
        for documented, test in self.address_map.items():
            text = re.sub(rf"(?<![\w.]){re.escape(documented)}(?![\w.])", test, text)
        return text

    def prepare_ssh_files(self, ex, ws):
        """The host-list files an SSH example names, written for the test hosts
        when no earlier example made them; returns how the hosts were given."""
        opts = before_program(ws)
        hosts = option_value(opts, "--hosts")
        if hosts and hosts != HOSTS_EXAMPLE:
            if not os.path.exists(os.path.join(self.work, hosts)):
                shutil.copy(os.path.join(ROOT, HOSTS_EXAMPLE), os.path.join(self.work, hosts))
                self.edit_hosts_file(hosts)
                self.edited[hosts] = "written by the test as the README's edited hosts.toml"
            return f"{hosts}: {self.edited.get(hosts, 'as edited after the cp')}, see above"
        hostfile = option_value(opts, "--hostfile")
        if hostfile:
            path = os.path.join(self.work, hostfile)
            if not os.path.exists(path):
                with open(path, "w") as f:
                    f.write("# the test hosts, as ~/.ssh/config aliases\n"
                            + "\n".join(self.hostfile_lines) + "\n")
            return f"{hostfile}: written by the test, see above"
        return "its host names are ~/.ssh/config aliases of the test hosts, see above"

    def edit_hosts_file(self, name):
        """What the README asks after `cp hosts.example.toml hosts.toml`: its
        [[host]] tables replaced by the README's (addresses mapped to the test
        hosts, the user to this one), and the PATH the ranks need on the hosts
        in [defaults] env."""
        path = os.path.join(self.work, name)
        with open(path) as f:
            lines = f.read().splitlines()
        hosts = self.substitute_ssh(self.readme_hosts_toml)
        hosts = re.sub(r'^(user\s*=\s*)"[^"]*"', rf'\1"{self.user}"', hosts, flags=re.M)
        tables = re.split(r"(?m)^(?=\[\[host\]\])", hosts)
        for n, t in enumerate(self.hosts.hosts):  # a port line where sshd is not on 22
            at = n + 1 if not tables[0].startswith("[[host]]") else n
            if t["port"] != 22 and at < len(tables):
                tables[at] = re.sub(r"(?m)^(address\s*=.*)$", rf"\1\nport = {t['port']}",
                                    tables[at], count=1)
        hosts = "".join(tables)
        out, in_host, replaced = [], False, False
        for line in lines:
            stripped = line.strip()
            if stripped == "[[host]]":
                in_host = True
                continue
            if in_host and (not stripped or re.match(r"^\w+\s*=", stripped)):
                continue
            if in_host and not replaced:
                out += hosts.rstrip("\n").splitlines() + [""]
                replaced = True
            in_host = False
            out.append(line)
            if stripped == "[defaults]":
                out.append(f'env = {{ PATH = "{BIN}:/usr/bin:/bin" }}')
        if in_host and not replaced:
            out += hosts.rstrip("\n").splitlines()
        with open(path, "w") as f:
            f.write("\n".join(out) + "\n")
        parsed = tomllib.loads("\n".join(out))
        if len(parsed.get("host", [])) != len(tomllib.loads(self.readme_hosts_toml)["host"]):
            raise AssertionError(f"editing {name} for the test hosts went wrong:\n"
                                 + "\n".join(out))

    def ensure_job(self, ex, name, need):
        """Makes the job a job command names what the command needs: returns the
        name to use and a note for `how`."""
        if is_placeholder(name):
            job = self.placeholder_job
            status = self.job_status(job) if job else None
            if need == "running" and status not in ACTIVE:
                self.made_jobs += 1
                job = f"job-{self.made_jobs}"
                made = self.make_job(job, long=True)
                status = self.wait_status(job, {"RUNNING"} | FINAL, timeout=60)
                note = f"{name} = {job}, a running job the test made (`{made}`)"
            elif need != "running" and status is None:
                self.made_jobs += 1
                job = f"job-{self.made_jobs}"
                made = self.make_job(job, long=False)
                status = self.wait_status(job, FINAL)
                note = f"{name} = {job}, a finished 4-rank job the test made (`{made}`)"
            else:
                stopped = ""
                if need != "running" and status in ACTIVE:
                    # Made for an example that needs it running (`stacks`):
                    # 50 epochs would outlast the wait.
                    r = self.sh(f"dlaunch stop {job}", f"stop-{job}", timeout=60)
                    if r.rc != 0:
                        raise RuntimeError(f"the test's own `dlaunch stop {job}` exited {r.rc}")
                    stopped = ", stopped by the test first"
                if need != "running":
                    status = self.wait_status(job, FINAL)
                note = f"{name} = {job}, the job made for {name} before ({status}{stopped})"
            self.placeholder_job = job
            return job, note
        status = self.job_status(name)
        if status is None and name not in self.doc_jobs:
            made = self.make_job(name, long=need == "running")
            if need == "running":
                self.wait_status(name, {"RUNNING"} | FINAL, timeout=60)
                self.stop_after.append(name)
                return name, (f"no example starts a job '{name}': the test started it "
                              f"(`{made}`), waited for RUNNING, and stopped it afterwards")
            self.wait_status(name, FINAL)
            return name, f"no example starts a job '{name}': the test made it (`{made}`)"
        if need == "finished" and status not in FINAL:
            status = self.wait_status(name, FINAL)
            return name, f"first waited for '{name}' to end (`dlaunch get {name} --json`: {status})"
        return name, ""

    def run_server(self, i, ex):
        """`dlaunch ui ...` as written, in the background: its page and
        /metrics at the URL it prints must answer, and SIGINT end it with 0."""
        ex.how = ("here, as written, in the background: GET / and /metrics at the URL it "
                  "prints, then SIGINT")
        run = self.start(ex.text, f"ex{i}")
        deadline = time.monotonic() + SERVER_SECONDS
        url = None
        while url is None and time.monotonic() < deadline and run.proc.poll() is None:
            with open(run.out) as f:
                m = re.search(r"(http://\S+/), ", f.read())
            url = m.group(1) if m else None
            time.sleep(0.1)
        if url is None:
            harness.kill_process_groups([run.proc])
            self.finish(run, 5)
            return self.mark_failed(ex, f"printed no URL within {SERVER_SECONDS} s", run)
        try:
            for path in ("", "metrics"):
                with urllib.request.urlopen(url + path, timeout=30) as r:
                    if r.status != 200:
                        raise RuntimeError(f"GET {url + path}: {r.status}")
        except Exception as e:  # noqa: BLE001 -- reported with the example
            harness.kill_process_groups([run.proc])
            self.finish(run, 5)
            return self.mark_failed(ex, f"{type(e).__name__}: {e}", run)
        os.killpg(run.proc.pid, signal.SIGINT)
        self.finish(run, 15)
        if run.rc != 0:
            return self.mark_failed(ex, f"exit code {run.rc} after SIGINT, expected 0", run)
        self.mark_ok(ex, "ok: / and /metrics answered 200, and SIGINT ended it with 0", run)

    def run_example(self, i, ex):
        if ex.kind == "server":
            return self.run_server(i, ex)
        ws = words(ex.text)
        text = ex.text
        how = []
        for file, (block, content) in ex.files.items():
            with open(os.path.join(self.work, file), "w") as f:
                f.write(content)
            how.append(f"{file} = the ```python block at {block}, written first")
        if ex.kind == "ssh":
            text = self.substitute_ssh(text)
            how.append(self.prepare_ssh_files(ex, ws))
            if text != ex.text:
                how.append(f"as `{text}`")
        self.stop_after = []
        ref = job_reference(ws, self.commands)
        if ref:
            name, note = self.ensure_job(ex, *ref)
            if name != ref[0]:
                text = re.sub(rf"(?<!\S){re.escape(ref[0])}(?!\S)", name, text)
            if note:
                how.append(note)
        pty = ex.kind == "interactive"
        env = dict(self.env, TERM=self.env.get("TERM", "xterm")) if pty else None
        if pty:
            how.append(f"under a pseudo-terminal (script -qec), TERM={env['TERM']}, stdin "
                       f"/dev/null: counts as working if it exits 0, or is still running after "
                       f"{INTERACTIVE_SECONDS} s (then killed) with a rank's output shown")
        ex.how = "; ".join([{"local": "here, as written", "ssh": "over SSH to the test hosts",
                             "interactive": "here, as written"}[ex.kind]] + how)
        run = self.sh(text, f"ex{i}", timeout=INTERACTIVE_SECONDS if pty else EXAMPLE_TIMEOUT,
                      pty=pty, env=env)
        if pty and run.timed_out and not RANK_LINE.search(ANSI_COLOR.sub("", run.stdout())):
            # Running, but no rank said anything: a launch stuck before its
            # ranks would pass as well.
            self.mark_failed(ex, f"still running after {INTERACTIVE_SECONDS} s, but no rank's "
                             "output reached the terminal", run)
        elif pty and run.timed_out:
            self.mark_ok(ex, f"ok: still running after {INTERACTIVE_SECONDS} s, its ranks' "
                         "output on the terminal", run)
        elif run.timed_out:
            self.mark_failed(ex, f"still running after {EXAMPLE_TIMEOUT} s (killed)", run)
        elif run.rc != 0:
            self.mark_failed(ex, f"exit code {run.rc}, expected 0", run)
        else:
            self.mark_ok(ex, "ok", run)
        self.after_example(i, ex, ws, text, run)

    def after_example(self, i, ex, ws, text, run):
        """What the docs promise after some commands, and the test's own
        clean-up of the jobs it started."""
        word = command_word(ws, self.commands)
        if ws[:2] == ["cp", HOSTS_EXAMPLE] and len(ws) == 3 and not ex.failure:
            self.edit_hosts_file(ws[2])
            self.edited[ws[2]] = f"the copy that {ex.source} made, edited as the README says"
            ex.how += f"; then {ws[2]} edited as the README says (see above)"
        if word == "stop" and not ex.failure:
            name = words(text)[2]
            status = self.wait_status(name, FINAL, timeout=60)
            ex.how += "; then waited for the job to end: the docs say it ends STOPPED"
            if status != "STOPPED":
                self.mark_failed(ex, f"job {name} ended {status}, the docs say STOPPED", run)
            else:
                ex.result += ", job STOPPED"
        name = detached_job(ws, self.commands)
        if name and not ex.failure:
            later = [e for e in self.examples[i + 1:] if not e.output
                     and (job_reference(words(e.text), self.commands) or ("",))[0] == name]
            self.doc_jobs.add(name)
            if not later:
                status = self.wait_status(name, FINAL, timeout=EXAMPLE_TIMEOUT)
                ex.how += "; no later example names the job: the test waited for it to end"
                if status != "SUCCEEDED":
                    self.mark_failed(ex, f"detached job {name} ended {status}, not SUCCEEDED", run)
                else:
                    ex.result += ", job SUCCEEDED"
        for name in self.stop_after:
            r = self.sh(f"dlaunch stop {name}", f"stop-{name}", timeout=60)
            if r.rc != 0:
                self.mark_failed(ex, f"the test's own `dlaunch stop {name}` exited {r.rc}", r)

    def manual_substitute(self, text):
        """Manual mode runs every node here: node 0's address is 127.0.0.1."""
        opts = before_program(words(text))
        value = option_value(opts, "--master-addr", "--master_addr")
        endpoint = option_value(opts, "--rdzv-endpoint", "--rdzv_endpoint")
        if not value and endpoint:
            value = endpoint.rsplit(":", 1)[0] if endpoint.count(":") == 1 else endpoint
        if value:
            text = re.sub(rf"(?<![\w.]){re.escape(value)}(?![\w.])", "127.0.0.1", text)
        return text, value

    def run_manual(self, i, ex):
        text, addr = self.manual_substitute(ex.text)
        opts = before_program(words(text))
        rank = option_value(opts, "--node-rank", "--node_rank", "--rank")
        nnodes = int((option_value(opts, "--nnodes") or "1").split(":")[-1])
        # torchrun's way: the same line on every node, node 0 the one that
        # holds the endpoint's address.
        same_line = rank is None and option_value(opts, "--rdzv-endpoint", "--rdzv_endpoint")
        if same_line:
            rank = "0"
        if rank != "0":
            ex.how = "alone"
            self.mark_failed(ex, f"a line for node {rank} with no node 0 line before it")
            return
        secret = "--secret-file" in opts or "DLAUNCH_SECRET" in text
        # The other nodes' lines shown in the same block run with this node 0.
        others = [e for e in self.examples[i + 1:] if e.block == ex.block and e.kind == "manual"
                  and option_value(before_program(words(e.text)), "--node-rank", "--node_rank",
                                   "--rank") not in (None, "0")]
        node0 = self.start(text, f"ex{i}-node0")
        how = [f"node 0 here in the background ({addr} -> 127.0.0.1)"]
        lines = []
        if not secret:
            line = self.printed_line(node0)
            if line is None:
                self.finish(node0, timeout=1)
                ex.how = how[0]
                self.mark_failed(ex, "node 0 printed no `DLAUNCH_SECRET=... dlaunch ... <N> ...` "
                                 "line for the other nodes", node0)
                return
            for n in range(1, nnodes):
                lines.append((None, line.strip().replace("<N>", str(n)), n))
            others_n = "1" if nnodes == 2 else f"1..{nnodes - 1}"
            how.append(f"node {others_n}: the line node 0 printed on stderr with <N> = "
                       f"{others_n}, run through sh -c as if pasted into a shell")
        elif same_line:
            # Every node here is this machine, which holds 127.0.0.1: the
            # others are told that they are not node 0.
            other = text.replace("dlaunch ", "dlaunch --rdzv-conf is_host=false ", 1)
            for n in range(1, nnodes):
                lines.append((None, other, n))
            how.append("the other nodes: the same line, with --rdzv-conf is_host=false because "
                       "they run on this machine too")
        elif others:
            for o in others:
                o_text, _ = self.manual_substitute(o.text)
                n = option_value(before_program(words(o_text)), "--node-rank", "--node_rank",
                                 "--rank")
                lines.append((o, o_text, n))
                o.handled = True
                o.how = f"as node {n} of the job that {ex.source} starts ({addr} -> 127.0.0.1)"
            how.append("the other nodes: the lines the docs show for them ("
                       + ", ".join(o.source for o in others) + ")")
        else:
            for n in range(1, nnodes):
                derived = re.sub(r"(--node-rank|--node_rank|--rank)(\s+|=)0(?!\S)",
                                 rf"\g<1>\g<2>{n}", text)
                lines.append((None, derived, n))
            how.append("the docs show only node 0's line: node 1 runs the same line with "
                       "--node-rank 1")
        how.append("both exit 0" if nnodes == 2 else "all exit 0")
        ex.how = "; ".join(how)
        runs = [(o, self.start(t, f"ex{i}-node{n}"), n) for o, t, n in lines]
        for o, r, n in runs:
            self.finish(r)
        self.finish(node0)
        bad = False
        for o, r, n in runs:
            if r.rc != 0 or r.timed_out:
                bad = True
                why = f"node {n} (`{r.proc.args[-1]}`) exit code {r.rc}" + \
                    (" (killed after the timeout)" if r.timed_out else "")
                self.mark_failed(o or ex, why, r)
                if o:
                    self.mark_failed(ex, f"its node {n} ({o.source}) failed")
            elif o:
                self.mark_ok(o, "ok", r)
        if node0.rc != 0 or node0.timed_out:
            self.mark_failed(ex, f"node 0 exit code {node0.rc}"
                             + (" (killed after the timeout)" if node0.timed_out else ""), node0)
        elif not bad:
            self.mark_ok(ex, "ok, both nodes", node0)

    def printed_line(self, node0, timeout=30):
        """The `DLAUNCH_SECRET=... dlaunch ... <N> ...` line that node 0 prints."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = node0.stderr()
            lines = text.splitlines()
            for n, line in enumerate(lines):
                if "DLAUNCH_SECRET=" in line and "<N>" in line:
                    self.printed[node0.proc.args[-1]] = "\n".join(lines[:n + 1])
                    return line
            if node0.proc.poll() is not None:
                return None
            time.sleep(0.1)
        return None

    def check_output(self, i, ex):
        """Documented output: compared with what the command before it in the
        same file printed (the secret value and node 0's address aside)."""
        before = [e for e in self.examples[:i] if e.source.split(":")[0] == ex.source.split(":")[0]
                  and not e.output]
        ex.how = "not a command: the output shown for " + (before[-1].source if before else "?")
        printed = None
        if before:
            printed = self.printed.get(self.manual_substitute(before[-1].text)[0])

        def normal(text):
            text = re.sub(r"\\\n", " ", text)
            text = re.sub(r"DLAUNCH_SECRET=\S+", "DLAUNCH_SECRET=<secret>", text)
            return " ".join(text.split())
        if printed is None:
            self.mark_failed(ex, "no output of the command before it to compare with")
            return
        documented = normal(self.manual_substitute(ex.text)[0])
        if documented != normal(printed):
            self.mark_failed(ex, "the documented output differs from what it printed:\n"
                             f"    documented: {documented}\n    printed:    {normal(printed)}")
        else:
            ex.how += "; compared with what it printed (secret and address aside)"
            ex.result = "matches the output"

    def report(self, seconds):
        test_hosts = " and ".join(self.where(t) for t in self.hosts.hosts)
        mapped = ", ".join(f"{a} -> {b}" for a, b in self.address_map.items())
        out = [f"\nDocumented examples ({len(self.examples)}), in document order: "
               f"source:line  command  ->  how it was run  ->  result [seconds, waits included]",
               f"Every command ran as `bash -o pipefail -c '<command>'` in one temp working "
               f"directory (holding a copy of hosts.example.toml), stdin /dev/null, "
               f"PATH={BIN}:/usr/bin:$PATH (the built dlaunch and mnist_dist first, then "
               f"/usr/bin/python3, which has torch), a temp HOME and one temp DLAUNCH_STATE_DIR.",
               f"Test hosts: 2 OpenSSH servers the test starts "
               f"({'network namespaces' if self.hosts.netns else 'loopback ports'}) at "
               f"{test_hosts}, user {self.user}, their keys in ~/.ssh/known_hosts; "
               f"~/.ssh/config aliases: {self.host_names}.",
               f"hosts.toml: hosts.example.toml with its [[host]] tables replaced by the README's "
               f"({mapped}; user \"{self.user}\") and [defaults] env = {{ PATH = "
               f"\"{BIN}:/usr/bin:/bin\" }}, so that mnist_dist is found on the hosts as a user "
               f"would set it up.",
               f"hostfile: {', '.join(self.hostfile_lines)} (the README's hosts, and the hosts "
               f"that examples using it name)."]
        for ex in self.examples:
            text = ex.text.replace("\n", " / ")
            out.append(f"{ex.source}  {text}  ->  {ex.how or '-'}  ->  "
                       f"{ex.result or 'not reached'}")
        ran = sum(1 for ex in self.examples if ex.result.startswith("ok")
                  and not ex.result.startswith("ok there"))
        again = sum(1 for ex in self.examples if "there" in ex.result)
        failed = sum(1 for ex in self.examples if ex.failure)
        not_run = sum(1 for ex in self.examples if ex.result.startswith("not run:"))
        out.append(f"{ran} ran ok, {failed} failed, {again} the same as one before (run once), "
                   f"{not_run} not run; {seconds:.0f} s")
        print("\n".join(out), flush=True)


if __name__ == "__main__":
    harness.require_binaries("dlaunch", "dlaunch-agent", "mnist_dist")
    sshd_harness.require_sshd()
    harness.main(verbosity=2)
