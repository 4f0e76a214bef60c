"""--sync-git against a bare repository that `git daemon` serves from inside
one test host's network namespace, to two SSH hosts with homes of their own
(sshd's SetEnv HOME), so that each host clones for itself.

The branch moves while the job starts: the second host cannot reach the git
daemon (a firewall rule drops its packets) until the first has checked out,
then the test pushes a new commit and lifts the rule. Both hosts must run the
commit the coordinator resolved, not the new tip.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
import sshd_harness  # noqa: E402
from harness import wait_for  # noqa: E402

PORT = 9418
SCRIPT = 'cd "$HOME/work/code/mnist" && echo "at $(git rev-parse HEAD) $(cat version)"'


def git(*args, cwd=None):
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True,
                          text=True).stdout.strip()


class SyncGitTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not shutil.which("git"):
            raise unittest.SkipTest("missing: git (git)")
        if not sshd_harness.can_use_netns():
            raise unittest.SkipTest(harness.netns_reason(honour_opt_out=False)
                                    or "no network namespaces")
        cls.tmp = tempfile.mkdtemp(prefix="dlaunch-git-")
        cls.homes = {n: os.path.join(cls.tmp, f"home-{n}") for n in ("h1", "h2")}
        for home in cls.homes.values():
            os.makedirs(home)
        cls.hosts = sshd_harness.SshHosts(
            2, netns=True, sshd_extra=lambda name: f"SetEnv HOME={cls.homes[name]}\n")
        cls.hosts.__enter__()
        cls.hosts.write_known_hosts()
        cls.hosts_file = cls.hosts.hosts_file([1, 1])
        # The repository: a bare one served by git daemon, and a work tree to push from.
        cls.served = os.path.join(cls.tmp, "served")
        os.makedirs(cls.served)
        git("init", "--quiet", "--bare", "--initial-branch=main",
            os.path.join(cls.served, "mnist.git"))
        cls.work = os.path.join(cls.tmp, "work-tree")
        git("clone", "--quiet", os.path.join(cls.served, "mnist.git"), cls.work)
        cls.commit_version("1")
        h1 = cls.hosts.hosts[0]
        cls.daemon = subprocess.Popen(
            ["ip", "netns", "exec", h1["ns"], "git", "daemon", "--reuseaddr", "--export-all",
             f"--base-path={cls.served}", f"--listen={h1['address']}", f"--port={PORT}",
             cls.served], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True)
        cls.url = f"git://{h1['address']}/mnist.git"
        if not wait_for(lambda: subprocess.run(["git", "ls-remote", cls.url],
                                               capture_output=True).returncode == 0, 15):
            cls.tearDownClass()
            raise RuntimeError("git daemon did not start")

    @classmethod
    def tearDownClass(cls):
        if getattr(cls, "daemon", None):
            os.killpg(cls.daemon.pid, 9)
            cls.daemon.wait()
        cls.hosts.close()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    @classmethod
    def commit_version(cls, version):
        with open(os.path.join(cls.work, "version"), "w") as f:
            f.write(version + "\n")
        git("add", "version", cwd=cls.work)
        git("commit", "--quiet", "-m", f"version {version}", cwd=cls.work)
        git("push", "--quiet", "origin", "HEAD:main", cwd=cls.work)
        return git("rev-parse", "HEAD", cwd=cls.work)

    def in_h1(self, *cmd, check=True):
        return subprocess.run(["ip", "netns", "exec", self.hosts.hosts[0]["ns"], *cmd],
                              capture_output=True, text=True, check=check)

    def head_of(self, name):
        try:
            with open(os.path.join(self.homes[name], "work", "code", "mnist", ".git",
                                   "HEAD")) as f:
                return f.read().strip()
        except OSError:
            return ""

    def test_every_host_runs_the_resolved_commit_while_the_branch_moves(self):
        resolved = git("rev-parse", "HEAD", cwd=self.work)
        h2 = self.hosts.hosts[1]
        # h2's packets to the daemon are dropped (not refused): its clone waits.
        self.in_h1("iptables", "-I", "INPUT", "-p", "tcp", "--dport", str(PORT), "-s",
                   h2["address"], "-j", "DROP")
        job = f"git-{os.getpid()}"
        proc = subprocess.Popen(
            [harness.DLAUNCH, "--hosts", self.hosts_file, "--name", job, "--workdir", "~/work",
             "--sync-git", f"{self.url}@main", "--", "/bin/sh", "-c", SCRIPT],
            env=self.hosts.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            self.assertTrue(wait_for(lambda: self.head_of("h1") == resolved, 60),
                            "h1 did not check out the resolved commit")
            self.assertNotEqual(self.head_of("h2"), resolved)  # still waiting on its clone
            moved = self.commit_version("2")  # the branch moves during the start
            self.assertNotEqual(moved, resolved)
        except BaseException:
            proc.kill()
            proc.communicate()
            raise
        finally:
            self.in_h1("iptables", "-D", "INPUT", "-p", "tcp", "--dport", str(PORT), "-s",
                       h2["address"], "-j", "DROP", check=False)
        out, err = proc.communicate(timeout=180)
        self.assertEqual(proc.returncode, 0, err)
        lines = sorted(line for line in out.splitlines() if " at " in line)
        self.assertEqual(lines, [f"[h1:0] at {resolved} 1", f"[h2:1] at {resolved} 1"], out)
        # h2 cloned after the branch moved: it has the new tip, and still ran the resolved one.
        h2_clone = os.path.join(self.homes["h2"], "work", "code", "mnist")
        self.assertEqual(subprocess.run(["git", "-C", h2_clone, "cat-file", "-e", moved])
                         .returncode, 0, "h2 fetched before the branch moved: no race was tested")
        r = subprocess.run([harness.DLAUNCH, "get", job], env=self.hosts.env(),
                           capture_output=True, text=True, timeout=30)
        self.assertIn(f"code:       {self.url} at {resolved}", r.stdout)

        # A second job reuses the clones and fetches the new tip.
        r = self.hosts.dlaunch(["--hosts", self.hosts_file, "--workdir", "~/work",
                                "--sync-git", self.url, "--", "/bin/sh", "-c", SCRIPT])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(sorted(line for line in r.stdout.splitlines() if " at " in line),
                         [f"[h1:0] at {moved} 2", f"[h2:1] at {moved} 2"])

        # check reports where each host's checkout is, and warns when they differ.
        def check():
            r = self.hosts.dlaunch(["check", "--hosts", self.hosts_file, "--workdir", "~/work",
                                    "--sync-git", self.url, "--matrix-seconds", "0", "--json"])
            self.assertEqual(r.returncode, 0, r.stderr)
            out = json.loads(r.stdout)
            return [h["git_commit"] for h in out["hosts"]], " ".join(out["warnings"])
        commits, warnings = check()
        self.assertEqual(commits, [moved, moved])
        self.assertNotIn("--sync-git", warnings)
        git("-C", os.path.join(self.homes["h2"], "work", "code", "mnist"), "checkout",
            "--quiet", "--detach", resolved)
        commits, warnings = check()
        self.assertEqual(commits, [moved, resolved])
        self.assertIn("the --sync-git checkout differs between hosts", warnings)

    def test_an_unknown_branch_is_refused_before_anything_starts(self):
        r = self.hosts.dlaunch(["--hosts", self.hosts_file, "--sync-git",
                                f"{self.url}@no-such-branch", "--", "/bin/true"])
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn(f"--sync-git {self.url}@no-such-branch: the repository has no branch or "
                      "tag 'no-such-branch'", r.stderr)


if __name__ == "__main__":
    harness.main()
