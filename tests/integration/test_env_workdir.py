"""The environment and working directory of ranks on an SSH host (a network
namespace when root): this shell's NCCL_*/CUDA_*/... variables follow, PATH only
when asked, with the documented precedence (the host's login environment <
forwarded < the hosts file's env < --env/--env-file), shown per host by
--dry-run; --workdir is used there, and a missing one names the host."""

import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
import sshd_harness  # noqa: E402

PY = "/usr/bin/python3"
DUMP = ("import os, sys\n"
        "keys = sys.argv[1].split(',')\n"
        "print('cwd=' + os.getcwd())\n"
        "for k in keys:\n"
        "    print(k + '=' + os.environ.get(k, '<unset>'))\n")


class EnvWorkdirTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.hosts = sshd_harness.SshHosts(1)
        cls.hosts.__enter__()
        cls.hosts.write_known_hosts()
        cls.hosts_file = cls.hosts.hosts_file(
            [1], extra="[defaults]\nenv = { NCCL_ALGO = \"file\", FROM_FILE = \"file\" }\n\n")

    @classmethod
    def tearDownClass(cls):
        cls.hosts.close()

    def rank_vars(self, stdout):
        out = {}
        for line in stdout.splitlines():
            text = line.split("] ", 1)[-1]
            key, _, value = text.partition("=")
            out[key] = value
        return out

    def test_forwarded_variables_and_precedence_on_a_remote_rank(self):
        env_file = os.path.join(self.hosts.tmp, "job.env")
        with open(env_file, "w") as f:
            f.write("# for every rank\nexport FROM_ENV_FILE='yes'\nNCCL_PROTO=envfile\n")
        keys = ["NCCL_DEBUG", "NCCL_ALGO", "NCCL_PROTO", "CUDA_CACHE_PATH", "CUDA_VISIBLE_DEVICES",
                "FROM_FILE", "FROM_ENV_FILE", "PATH"]
        shell = {"NCCL_DEBUG": "INFO", "NCCL_ALGO": "shell", "NCCL_PROTO": "shell",
                 "CUDA_CACHE_PATH": "/cache", "CUDA_VISIBLE_DEVICES": "7",
                 "PATH": "/opt/only-here/bin:" + os.environ.get("PATH", "/usr/bin:/bin")}
        r = self.hosts.dlaunch(["--hosts", self.hosts_file, "--env-file", env_file, "--env",
                          "NCCL_PROTO=cli", "--", PY, "-c", DUMP, ",".join(keys)], **shell)
        self.assertEqual(r.returncode, 0, r.stderr)
        got = self.rank_vars(r.stdout)
        self.assertEqual(got["NCCL_DEBUG"], "INFO")          # forwarded
        self.assertEqual(got["NCCL_ALGO"], "file")           # hosts file > forwarded
        self.assertEqual(got["NCCL_PROTO"], "cli")           # --env > --env-file > forwarded
        self.assertEqual(got["CUDA_CACHE_PATH"], "/cache")   # CUDA_* follows
        self.assertEqual(got["CUDA_VISIBLE_DEVICES"], "<unset>")  # but not this one
        self.assertEqual(got["FROM_FILE"], "file")
        self.assertEqual(got["FROM_ENV_FILE"], "yes")
        self.assertNotIn("/opt/only-here/bin", got["PATH"])  # the host's login PATH

        r = self.hosts.dlaunch(["--hosts", self.hosts_file, "--forward-env", "PATH", "--no-forward-env",
                          "--", PY, "-c", DUMP, "PATH,NCCL_DEBUG"], **shell)
        self.assertEqual(r.returncode, 0, r.stderr)
        got = self.rank_vars(r.stdout)
        self.assertTrue(got["PATH"].startswith("/opt/only-here/bin:"), got["PATH"])
        self.assertEqual(got["NCCL_DEBUG"], "<unset>")

        r = self.hosts.dlaunch(["--dry-run", "--hosts", self.hosts_file, "--env", "NCCL_PROTO=cli",
                          "--", "prog"], **shell)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("NCCL_ALGO=file (hosts file)", r.stdout)
        self.assertIn("NCCL_DEBUG=INFO (forwarded)", r.stdout)
        self.assertIn("NCCL_PROTO=cli (--env)", r.stdout)

    def test_workdir_on_the_host_and_a_missing_one_named(self):
        work = os.path.join(self.hosts.tmp, "work dir")
        os.makedirs(work, exist_ok=True)
        r = self.hosts.dlaunch(["--hosts", self.hosts_file, "--workdir", work, "--", PY, "-c", DUMP,
                          "X"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.rank_vars(r.stdout)["cwd"], work)

        # By default: this directory, where the host has it (the test hosts share this disk).
        r = subprocess.run([harness.DLAUNCH, "--hosts", self.hosts_file, "--", PY, "-c", DUMP,
                            "X"], capture_output=True, text=True, timeout=120, cwd=work,
                           env=self.hosts.env())
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.rank_vars(r.stdout)["cwd"], work)

        missing = os.path.join(self.hosts.tmp, "no-such-dir")
        r = self.hosts.dlaunch(["--hosts", self.hosts_file, "--workdir", missing, "--", "true"])
        self.assertNotEqual(r.returncode, 0)
        self.assertIn(f"--workdir {missing} is not usable on h1", r.stderr)


if __name__ == "__main__":
    harness.require_binaries()
    harness.main(verbosity=2)
