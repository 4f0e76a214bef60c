"""The command table seen from the real binary: --help lists the commands,
`run` is the launch, an unknown first word is a usage error with a
suggestion, and programs (also one named like a command, after --) still run."""

import os
import re
import socket
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import DlaunchTestCase  # noqa: E402

COMMANDS = ["run", "list", "get", "logs", "stop", "stacks", "top", "check"]


def listed_commands(help_text):
    """The names in the "Commands" section of --help."""
    section = help_text.split("Commands", 1)[1].split("\n\n", 1)[0]
    return [m.group(1) for m in re.finditer(r"^  (\S+)  ", section, re.M)]


class CliCommandsTest(DlaunchTestCase):
    def test_help_lists_the_commands(self):
        r = self.run_dlaunch(["--help"])
        self.assertEqual(r.returncode, 0, r.stderr)
        for name in COMMANDS:
            self.assertIn(name, listed_commands(r.stdout))
        self.assertIn("--nproc-per-node", r.stdout)
        self.assertIn("dlaunch logs JOB", r.stdout)

    def test_check_help(self):
        r = self.run_dlaunch(["check", "--help"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("--hosts", r.stdout)
        self.assertIn("--json", r.stdout)
        self.assertIn("dlaunch check --hosts hosts.toml", r.stdout)
        r = self.run_dlaunch(["check"])
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("--hosts", r.stderr)

    def test_a_rendezvous_port_in_use_is_named_with_how_to_choose_another(self):
        with socket.socket() as taken:
            taken.bind(("127.0.0.1", 0))
            taken.listen()
            port = taken.getsockname()[1]
            hosts = self.write("hosts.toml", f"[rendezvous]\nport = {port}\n\n"
                               '[[host]]\nname = "localhost"\naddress = "127.0.0.1"\n')
            in_use = (f"dlaunch: error: cannot listen for the rendezvous on 127.0.0.1:{port}: "
                      "bind: Address already in use (is another job using it? choose another "
                      "with ")
            r = self.run_dlaunch(["--hosts", hosts, "--", "true"])
            self.assertEqual(r.returncode, 1, r.stderr)
            self.assertIn(in_use + "--rdzv-port)\n", r.stderr)
            # check has no --rdzv-port: its port is the hosts file's alone.
            r = self.run_dlaunch(["check", "--hosts", hosts])
            self.assertEqual(r.returncode, 1, r.stderr)
            self.assertIn(in_use + "[rendezvous] port in the hosts file)\n", r.stderr)

    def test_unknown_command_exits_2_with_a_suggestion(self):
        r = self.run_dlaunch(["chek"])
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertEqual(r.stdout, "")
        commands = listed_commands(self.run_dlaunch(["--help"]).stdout)
        if "check" in commands:
            self.assertEqual(r.stderr,
                             "dlaunch: error: unknown command 'chek'; did you mean 'check'?\n")
        else:  # nothing close: the message lists the commands instead
            self.assertIn("dlaunch: error: unknown command 'chek'", r.stderr)
            self.assertIn(", ".join(commands), r.stderr)
        r = self.run_dlaunch(["lsit"])
        self.assertEqual(r.returncode, 2)
        self.assertEqual(r.stderr, "dlaunch: error: unknown command 'lsit'; did you mean 'list'?\n")
        self.assertEqual(os.listdir(self.tmp), [], "a usage error must start no job")

    def test_a_program_named_like_a_command_runs_after_dashes(self):
        bin_dir = os.path.join(self.tmp, "bin")
        os.mkdir(bin_dir)
        with open(os.path.join(bin_dir, "list"), "w") as f:
            f.write("#!/bin/sh\necho the program list ran\n")
        os.chmod(os.path.join(bin_dir, "list"), 0o755)
        env = self.env(PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""))
        job = self.job_name("list")
        r = self.run_dlaunch(["--name", job, "--", "list"], env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("the program list ran\n", r.stdout)
        # without "--" the word is the command, which now sees that job
        r = self.run_dlaunch(["list"], env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.splitlines()[0].split()[0], "NAME")
        self.assertIn(job, r.stdout)

    def test_missing_program_named_like_a_command_is_tried(self):
        r = self.run_dlaunch(["--", "list"], env=self.env(PATH="/nonexistent"))
        self.assertEqual(r.returncode, 127, r.stderr)
        self.assertIn("cannot run list", r.stderr)
        self.assertNotIn("unknown command", r.stderr)

    def test_run_is_the_launch(self):
        r = self.run_dlaunch(["run", "--nproc-per-node", "1", "--", "/bin/echo", "hi"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("hi\n", r.stdout)

    def test_programs_still_run_without_a_command(self):
        r = self.run_dlaunch(["sleep", "0.1"])
        self.assertEqual(r.returncode, 0, r.stderr)
        r = self.run_dlaunch(["/bin/echo", "hi"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("hi\n", r.stdout)
        r = self.run_dlaunch(["-n", "1", sys.executable, "-c", "print('from python')"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("from python\n", r.stdout)

    def test_bad_values_are_refused_with_the_real_reason(self):
        r = self.run_dlaunch(["--name", "n" * 300, "--", "true"])
        self.assertEqual(r.returncode, 2)
        self.assertIn("is 300 characters long; at most 200", r.stderr)
        a_file = self.write("data.txt", "not a directory\n")
        r = self.run_dlaunch(["--sync", a_file, "--", "true"])
        self.assertEqual(r.returncode, 2)
        self.assertIn(f"{a_file} is a file, not a directory", r.stderr)
        self.assertNotIn("Directory does not exist", r.stderr)
        r = self.run_dlaunch(["--sync", os.path.join(self.tmp, "none"), "--", "true"])
        self.assertIn("No such file or directory", r.stderr)
        hostfile = os.path.join(self.tmp, "hostfile")
        with open(hostfile, "wb") as f:
            f.write(b"a slots=\xff\n")
        r = subprocess.run([harness.DLAUNCH, "--hostfile", hostfile, "--", "true"],
                           capture_output=True, env=self.env(), timeout=30)
        self.assertEqual(r.returncode, 2)
        self.assertNotIn(b"\xff", r.stderr)
        self.assertIn(b"'\\xff'", r.stderr)


if __name__ == "__main__":
    harness.require_binaries()
    harness.main(verbosity=2)
