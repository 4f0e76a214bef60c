"""Bad hosts files: dlaunch reports every mistake as FILE:LINE:COL, exits 2
(config error), and connects nowhere. Each case lists the lines that must be
reported; all of a file's errors come in one run."""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

BIN_DIR = os.environ.get("DLAUNCH_BIN_DIR", "")
DLAUNCH = os.path.join(BIN_DIR, "dlaunch")
SKIP = 77
EXIT_USAGE = 2

# (name, file text, lines that must be reported, part of the message or None)
CASES = [
    ("syntax_error", '[[host]]\naddress = "a"\nslots =\n', [3], None),
    ("unterminated_string", '[[host]]\naddress = "a\n', [2], None),
    ("no_hosts", "[defaults]\nslots = 2\n", [1], "no hosts"),
    ("single_bracket_host", '[host]\naddress = "a"\n', [1], "[[host]]"),
    ("missing_address", '[[host]]\naddress = "a"\n\n[[host]]\nname = "b"\n', [4], "address"),
    ("duplicate_name", '[[host]]\nname = "n"\naddress = "a"\n[[host]]\nname = "n"\naddress = "b"\n',
     [5], "line 2"),
    ("slots_zero", '[[host]]\naddress = "a"\nslots = 0\n', [3], "slots"),
    ("slots_string", '[[host]]\naddress = "a"\nslots = "8"\n', [3], "must be an integer"),
    ("port_range", '[[host]]\naddress = "a"\nport = 70000\n', [3], "65535"),
    ("transport", '[[host]]\naddress = "a"\ntransport = "shh"\n', [3], "did you mean 'ssh'?"),
    ("unknown_host_key", '[[host]]\naddress = "a"\nslot = 2\n', [3], "did you mean 'slots'?"),
    ("unknown_defaults_key", '[defaults]\nuesr = "x"\n[[host]]\naddress = "a"\n', [2],
     "did you mean 'user'?"),
    ("unknown_rendezvous_key", '[[host]]\naddress = "a"\n[rendezvous]\nprot = 1\n', [4],
     "did you mean 'port'?"),
    ("unknown_top_level_key", '[[hosts]]\naddress = "a"\n[[host]]\naddress = "a"\n', [1],
     "did you mean 'host'?"),
    ("env_value_type", '[[host]]\naddress = "a"\nenv = { A = 1.5 }\n', [3], None),
    ("env_name", '[[host]]\naddress = "a"\nenv = { "A-B" = "x" }\n', [3], "A-B"),
    ("address_option", '[[host]]\naddress = "-oProxyCommand=touch /tmp/x"\n', [2], "'-'"),
    ("address_space", '[[host]]\naddress = "a b"\n', [2], "whitespace"),
    ("interface", '[[host]]\naddress = "a"\ninterface = "eth0;reboot"\n', [3], "interface"),
    ("many_errors_at_once",
     '[defaults]\nslots = 0\n\n[[host]]\naddress = "a"\nslot = 1\n\n[[host]]\nport = 0\n'
     '\n[rendezvous]\nport = "x"\n',
     [2, 6, 8, 9, 12], None),
]


class BadHostsFilesTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="dlaunch-hosts-test-")
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)

    def run_dlaunch(self, path):
        return subprocess.run([DLAUNCH, "--hosts", path, "--", "/bin/true"],
                              stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=30, cwd=self.tmp)

    def test_each_bad_file(self):
        for name, text, lines, part in CASES:
            with self.subTest(name):
                path = os.path.join(self.tmp, name + ".toml")
                with open(path, "w") as f:
                    f.write(text)
                p = self.run_dlaunch(path)
                self.assertEqual(p.returncode, EXIT_USAGE, p.stderr)
                errors = [l for l in p.stderr.splitlines() if l.startswith("dlaunch: error: ")]
                for line in lines:
                    self.assertTrue(
                        any(e.startswith(f"dlaunch: error: {path}:{line}:") for e in errors),
                        f"no error for line {line}:\n{p.stderr}")
                self.assertEqual(len(errors), len(lines), p.stderr)
                if part is not None:
                    self.assertIn(part, p.stderr)
                self.assertEqual(p.stdout, "")

    def test_missing_file(self):
        path = os.path.join(self.tmp, "no-such-hosts.toml")
        p = self.run_dlaunch(path)
        self.assertEqual(p.returncode, EXIT_USAGE, p.stderr)
        self.assertIn("no-such-hosts.toml", p.stderr)

    def test_example_file_is_valid(self):
        example = os.path.join(os.path.dirname(__file__), "..", "..", "hosts.example.toml")
        p = subprocess.run([DLAUNCH, "--hosts", example, "--dry-run", "--", "/bin/true"],
                           stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30,
                           cwd=self.tmp)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("node0", p.stdout)
        self.assertIn("node1", p.stdout)


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import harness  # noqa: E402
    if not os.access(DLAUNCH, os.X_OK):
        harness.skip_file(f"not built: {DLAUNCH} (set DLAUNCH_BIN_DIR)")
    harness.main()
