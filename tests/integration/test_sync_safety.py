"""What --sync and --sync-git must never do to a user's files, as users met it
on one machine (local "nodes", no root needed):

- `--sync src --sync-delete --workdir .` (the destination holds the source)
  deleted src/ itself and every file beside it; `--sync . --workdir ./run`
  (the destination inside the source) grew run/run/run/. Both are refused
  before anything is written, naming both directories, and every file stays.
- Two `--sync-git` jobs on one workdir at two commits shared one checkout:
  the first job's code changed under it. The second is refused, naming the
  first; one at the same commit shares the tree; once the first has ended,
  the other commit is checked out.
- `--sync-git` left submodules empty without a word, said nothing of the
  uncommitted edits in the tree it was started from, cut git's own cause
  line from its errors, and contacted the repository under --dry-run."""

import fcntl
import os
import shutil
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import wait_for  # noqa: E402


def tree(root):
    """Every path under root, relative, with the content of each file."""
    found = {}
    for here, dirs, files in os.walk(root):
        for d in dirs:
            found[os.path.relpath(os.path.join(here, d), root) + "/"] = None
        for f in files:
            path = os.path.join(here, f)
            with open(path, "rb") as fh:
                found[os.path.relpath(path, root)] = fh.read()
    return found


class SyncOverlapTest(harness.DlaunchTestCase):
    def setUp(self):
        super().setUp()
        self.proj = os.path.join(self.tmp, "proj")
        os.makedirs(os.path.join(self.proj, "src"))
        with open(os.path.join(self.proj, "notes.txt"), "w") as f:
            f.write("k\n")
        with open(os.path.join(self.proj, "src", "t.py"), "w") as f:
            f.write("print(1)\n")

    def sync(self, *args, cwd):
        return self.run_dlaunch(["--nproc-per-node", "1", *args, "--", "ls"], cwd=cwd, timeout=60)

    def test_a_destination_that_holds_the_source_is_refused_and_nothing_is_deleted(self):
        before = tree(self.proj)
        r = self.sync("--sync", "src", "--sync-delete", "--workdir", self.proj, cwd=self.proj)
        self.assertNotEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn(f"--sync {self.proj}/src would be written into {self.proj}, which holds it",
                      r.stderr)
        self.assertNotIn("deleted", r.stderr)
        self.assertEqual(tree(self.proj), before)

    def test_a_destination_inside_the_source_is_refused(self):
        before = tree(self.proj)
        r = self.sync("--sync", ".", "--workdir", "./run", cwd=self.proj)
        self.assertNotEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn(f"--sync {self.proj} would be written into", r.stderr)
        self.assertIn("which lies inside it", r.stderr)
        # run/ is made for the ranks (empty); nothing was copied into it.
        after = tree(self.proj)
        self.assertEqual(os.listdir(os.path.join(self.proj, "run")), [])
        del after["run/"]
        self.assertEqual(after, before)

    def test_the_source_itself_as_destination_is_refused(self):
        link = os.path.join(self.tmp, "same")
        os.symlink(self.proj, link)  # one directory, spelt another way
        r = self.sync("--sync", self.proj, "--sync-delete", "--workdir", link, cwd=self.tmp)
        self.assertNotEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("would be written into itself", r.stderr)
        self.assertTrue(os.path.exists(os.path.join(self.proj, "notes.txt")))

    def test_a_separate_destination_still_mirrors_with_deletions(self):
        dest = os.path.join(self.tmp, "elsewhere")
        os.makedirs(dest)
        with open(os.path.join(dest, "stale.txt"), "w") as f:
            f.write("old\n")
        r = self.sync("-v", "--sync", "src", "--sync-delete", "--workdir", dest, cwd=self.proj)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(sorted(os.listdir(dest)), ["t.py"])
        self.assertIn("1 deleted", r.stderr)


def git(*args, cwd=None, env=None):
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com", **(env or {})}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True,
                          text=True).stdout.strip()


# Prints the checkout's version, waits until the test lets it go, prints it again.
HOLD = ('echo "start $(cat code/repo/version)"; '
        'while [ ! -e "$RELEASE" ]; do sleep 0.1; done; echo "end $(cat code/repo/version)"')


class GitRepositoryCase(harness.DlaunchTestCase):
    """A test with a repository of its own, at self.repo (branch main)."""

    def setUp(self):
        super().setUp()
        if not shutil.which("git"):
            self.skipTest("missing: git (git)")
        self.repo = os.path.join(self.tmp, "repo")
        git("init", "--quiet", "--initial-branch=main", self.repo)


class SyncGitSharedWorkdirTest(GitRepositoryCase):
    def setUp(self):
        super().setUp()
        self.commit("three")
        self.main = git("rev-parse", "HEAD", cwd=self.repo)
        git("checkout", "--quiet", "-b", "feature", cwd=self.repo)
        self.feature = self.commit("feat")
        git("checkout", "--quiet", "main", cwd=self.repo)
        self.workdir = os.path.join(self.tmp, "work")
        self.release = os.path.join(self.tmp, "release")

    def commit(self, version):
        with open(os.path.join(self.repo, "version"), "w") as f:
            f.write(version + "\n")
        git("add", "version", cwd=self.repo)
        git("commit", "--quiet", "-m", version, cwd=self.repo)
        return git("rev-parse", "HEAD", cwd=self.repo)

    def job(self, name, ref, script):
        return ["--nproc-per-node", "1", "--name", name, "--workdir", self.workdir,
                "--sync-git", f"{self.repo}@{ref}", "--", "/bin/sh", "-c", script]

    def test_a_second_job_at_another_commit_is_refused_and_the_first_keeps_its_code(self):
        a = self.job_name("git-a")
        first = self.start_dlaunch(self.job(a, "main", HOLD),
                                   env=self.env(RELEASE=self.release))
        try:
            started = os.path.join(self.state, a)
            self.assertTrue(wait_for(lambda: os.path.exists(
                os.path.join(self.workdir, "code", "repo", "version")) and any(
                    "start" in open(os.path.join(started, f), errors="replace").read()
                    for f in os.listdir(started) if f.startswith("rank-")), 60),
                "job A did not start")
            b = self.job_name("git-b")
            r = self.run_dlaunch(self.job(b, "feature", "cat code/repo/version"), timeout=60)
            self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
            self.assertIn(f"is checked out at {self.main[:12]} for job '{a}', which is running",
                          r.stderr)
            self.assertNotIn("feat", r.stdout)
            # The same commit shares the tree.
            c = self.job_name("git-c")
            r = self.run_dlaunch(self.job(c, "main", "cat code/repo/version"), timeout=60)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("three", r.stdout)
        finally:
            open(self.release, "w").close()
        out, err = first.communicate(timeout=60)
        self.assertEqual(first.returncode, 0, err)
        self.assertIn("start three", out)
        self.assertIn("end three", out)
        self.assertNotIn("feat", out)
        # Once A has ended, B gets its commit.
        b2 = self.job_name("git-b")
        r = self.run_dlaunch(self.job(b2, "feature", "cat code/repo/version"), timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("feat", r.stdout)

    def test_a_killed_job_does_not_hold_the_checkout(self):
        a = self.job_name("git-a")
        first = self.start_dlaunch(self.job(a, "main", HOLD), env=self.env(RELEASE=self.release),
                                   start_new_session=True)
        jobs = os.path.join(self.workdir, "code", ".repo.dlaunch-jobs")
        self.assertTrue(wait_for(lambda: os.path.isdir(jobs) and os.listdir(jobs), 60))
        os.killpg(first.pid, 9)
        first.communicate()
        harness.kill_marker(a)
        self.assertEqual(harness.wait_no_marker(a), [])

        def released():  # the agent noticed its coordinator gone and ended
            for name in os.listdir(jobs):
                with open(os.path.join(jobs, name)) as f:
                    try:
                        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    except OSError:
                        return False
            return True
        self.assertTrue(wait_for(released, 30), "job A's agent still holds the checkout")
        b = self.job_name("git-b")
        r = self.run_dlaunch(self.job(b, "feature", "cat code/repo/version"), timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("feat", r.stdout)


class SyncGitRepositoryTest(GitRepositoryCase):
    def setUp(self):
        super().setUp()
        with open(os.path.join(self.repo, "train.sh"), "w") as f:
            f.write("echo training\n")
        git("add", "train.sh", cwd=self.repo)
        git("commit", "--quiet", "-m", "one", cwd=self.repo)
        self.workdir = os.path.join(self.tmp, "work")

    def test_submodules_are_checked_out_at_the_recorded_commit(self):
        data = os.path.join(self.tmp, "data")
        git("init", "--quiet", "--initial-branch=main", data)
        with open(os.path.join(data, "labels"), "w") as f:
            f.write("first labels\n")
        git("add", "labels", cwd=data)
        git("commit", "--quiet", "-m", "labels", cwd=data)
        # Local paths as submodule URLs are git's "file" protocol, which git
        # only follows for submodules when told to (here and for the job).
        allow = {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "protocol.file.allow",
                 "GIT_CONFIG_VALUE_0": "always"}
        git("submodule", "add", "--quiet", data, "data", cwd=self.repo, env=allow)
        git("commit", "--quiet", "-m", "with data", cwd=self.repo)
        # The submodule moves on after the commit: the job has the recorded one.
        with open(os.path.join(data, "labels"), "w") as f:
            f.write("later labels\n")
        git("commit", "--quiet", "-am", "later", cwd=data)
        r = self.run_dlaunch(["--workdir", self.workdir, "--sync-git", self.repo, "--",
                              "/bin/sh", "-c", "cat code/repo/data/labels"],
                             env=self.env(**allow), timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "[0] first labels\n")

    def test_a_submodule_that_cannot_be_fetched_fails_with_gits_cause(self):
        data = os.path.join(self.tmp, "data")
        git("init", "--quiet", "--initial-branch=main", data)
        git("commit", "--quiet", "--allow-empty", "-m", "empty", cwd=data)
        allow = {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "protocol.file.allow",
                 "GIT_CONFIG_VALUE_0": "always"}
        git("submodule", "add", "--quiet", data, "data", cwd=self.repo, env=allow)
        git("commit", "--quiet", "-m", "with data", cwd=self.repo)
        shutil.rmtree(data)  # the submodule's repository is gone
        r = self.run_dlaunch(["--workdir", self.workdir, "--sync-git", self.repo, "--",
                              "/bin/true"], env=self.env(**allow), timeout=60)
        self.assertNotEqual(r.returncode, 0)
        self.assertRegex(r.stderr, rf"the submodules of {self.repo} at [0-9a-f]{{12}} \(git "
                                   r"submodule update --init --recursive\): fatal: ")
        self.assertIn(data, r.stderr)

    def test_uncommitted_changes_here_are_said_to_be_left_out(self):
        clone = os.path.join(self.tmp, "clone")
        git("clone", "--quiet", self.repo, clone)
        with open(os.path.join(clone, "train.sh"), "a") as f:
            f.write("echo edited\n")
        r = self.run_dlaunch(["--workdir", self.workdir, "--sync-git", self.repo, "--",
                              "/bin/sh", "-c", "sh code/repo/train.sh"], cwd=clone, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "[0] training\n")  # the commit, not the edit
        self.assertIn(f"the git work tree here ({clone}) has uncommitted changes to 1 file that "
                      f"the job will not see: every host runs commit ", r.stderr)
        # A clean tree, or another repository's, says nothing.
        git("checkout", "--quiet", "train.sh", cwd=clone)
        r = self.run_dlaunch(["--workdir", self.workdir, "--sync-git", self.repo, "--",
                              "/bin/true"], cwd=clone, timeout=60)
        self.assertNotIn("uncommitted", r.stderr)

    def test_dry_run_asks_no_repository(self):
        missing = os.path.join(self.tmp, "not-there.git")
        r = self.run_dlaunch(["--dry-run", "--sync-git", missing + "@main", "--", "/bin/true"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(f"code: {missing} at main as the job starts (--dry-run asks no repository)",
                      r.stdout)

    def test_gits_own_cause_is_kept(self):
        missing = os.path.join(self.tmp, "not-there.git")
        r = self.run_dlaunch(["--sync-git", missing, "--", "/bin/true"])
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn(f"--sync-git {missing}: git ls-remote failed: fatal: '{missing}' does not "
                      "appear to be a git repository", r.stderr)


if __name__ == "__main__":
    harness.require_binaries()
    harness.main()
