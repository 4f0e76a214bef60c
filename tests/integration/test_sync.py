"""--sync DIR to an SSH host (a network namespace when root) over the job's
rendezvous link: the tree arrives in --workdir before the ranks start, with
modes and symlinks, without .git and what .dlaunchignore names; a second run
sends only the changed file (the byte counts that `-v` prints per host are
asserted); --sync-delete mirrors a local deletion and keeps ignored files;
--rdzv-via-ssh carries it too; a sync that cannot complete fails the job
before any rank starts, naming the host. The test hosts share this machine's
disk, so the destination is read directly."""

import os
import re
import shutil
import stat
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
import sshd_harness  # noqa: E402

SYNCED = re.compile(r"sync to (\S+): (\d+) files written, (\d+) bytes sent, (\d+) deleted")


def mode(path):
    return stat.S_IMODE(os.lstat(path).st_mode)


class WithHosts(unittest.TestCase):
    """Starts HOSTS sshd hosts for the class, their keys known."""
    HOSTS = 1

    @classmethod
    def setUpClass(cls):
        cls.hosts = sshd_harness.SshHosts(cls.HOSTS)
        cls.hosts.__enter__()
        try:
            cls.hosts.write_known_hosts()
        except BaseException:
            cls.hosts.close()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.hosts.close()


class SyncTest(WithHosts):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.hosts_file = cls.hosts.hosts_file([1])

    def setUp(self):
        self.src = os.path.join(self.hosts.tmp, "project")
        self.dest = os.path.join(self.hosts.tmp, "remote", "run dir")
        for d in (self.src, os.path.join(self.hosts.tmp, "remote")):
            shutil.rmtree(d, ignore_errors=True)
        os.makedirs(os.path.join(self.src, "sub", "deep"))
        os.makedirs(os.path.join(self.src, ".git"))
        os.makedirs(os.path.join(self.src, "data"))
        self.write("train.sh", "#!/bin/sh\necho training\n", 0o755)
        self.write("sub/deep/config.txt", "lr=0.1\n")
        self.write("sub/deep/secret.txt", "owner only\n", 0o600)
        self.write(".git/HEAD", "ref: refs/heads/main\n")
        self.write("model.pt", "checkpoint")
        self.write("data/shard0", "x" * 1000)
        self.write(".dlaunchignore", "# not synced\n*.pt\ndata/\n")
        with open(os.path.join(self.src, "big.bin"), "wb") as f:
            f.write(os.urandom(3 * 1024 * 1024 + 17))
        os.symlink("train.sh", os.path.join(self.src, "run"))
        os.symlink("sub/deep", os.path.join(self.src, "cfg"))

    def write(self, rel, text, file_mode=0o644):
        path = os.path.join(self.src, rel)
        with open(path, "w") as f:
            f.write(text)
        os.chmod(path, file_mode)

    def sync(self, *extra, command=("sh", "-c", "cat cfg/config.txt")):
        r = self.hosts.dlaunch(["-v", "--hosts", self.hosts_file, "--sync", self.src, "--workdir",
                          self.dest, *extra, "--", *command])
        self.assertEqual(r.returncode, 0, r.stderr)
        found = SYNCED.findall(r.stderr)
        self.assertEqual(len(found), 1, r.stderr)
        host, files, sent, deleted = found[0]
        self.assertEqual(host, "h1")
        return r, int(files), int(sent), int(deleted)

    def test_sync_then_only_changes_then_deletions(self):
        r, files, sent, deleted = self.sync()
        # Files, both symlinks; the ranks ran in the synced tree, through a symlink.
        self.assertIn("lr=0.1", r.stdout)
        self.assertEqual(files, 7)
        big = 3 * 1024 * 1024 + 17
        synced = ["train.sh", "sub/deep/config.txt", "sub/deep/secret.txt", ".dlaunchignore",
                  "big.bin"]
        self.assertEqual(sent, sum(os.path.getsize(os.path.join(self.src, f)) for f in synced))
        self.assertGreater(sent, big)
        self.assertEqual(deleted, 0)
        print(f"\nfirst run: {files} files written, {sent} bytes sent", file=sys.stderr)
        d = self.dest
        self.assertEqual(mode(os.path.join(d, "train.sh")), 0o755)
        self.assertEqual(mode(os.path.join(d, "sub/deep/secret.txt")), 0o600)
        self.assertEqual(mode(os.path.join(d, "sub/deep/config.txt")), 0o644)
        self.assertEqual(os.readlink(os.path.join(d, "run")), "train.sh")
        self.assertEqual(os.readlink(os.path.join(d, "cfg")), "sub/deep")
        with open(os.path.join(d, "big.bin"), "rb") as a, \
                open(os.path.join(self.src, "big.bin"), "rb") as b:
            self.assertEqual(a.read(), b.read())
        for absent in (".git", "model.pt", "data"):
            self.assertFalse(os.path.lexists(os.path.join(d, absent)), absent)
        self.assertEqual([n for n in os.listdir(d) if n.startswith(".dlaunch-sync-")], [])

        # Nothing changed: nothing is sent.
        _, files, sent, _ = self.sync()
        self.assertEqual((files, sent), (0, 0))

        # One file changed, one mode changed: only that file's bytes travel.
        self.write("sub/deep/config.txt", "lr=0.05\n")
        os.chmod(os.path.join(self.src, "train.sh"), 0o700)
        r, files, sent, _ = self.sync()
        self.assertIn("lr=0.05", r.stdout)
        self.assertEqual((files, sent), (1, len("lr=0.05\n")))
        self.assertEqual(mode(os.path.join(d, "train.sh")), 0o700)
        print(f"after one change: {files} files written, {sent} bytes sent", file=sys.stderr)

        # The same through --rdzv-via-ssh (the agent reaches the rendezvous
        # over its SSH connection): one more change arrives.
        self.write("train.sh", "#!/bin/sh\necho training v2\n", 0o755)
        _, files, sent, _ = self.sync("--rdzv-via-ssh")
        self.assertEqual((files, sent), (1, len("#!/bin/sh\necho training v2\n")))

        # --sync-delete: a file deleted here goes there too; ignored files and
        # .git there stay; without it, nothing is deleted.
        os.remove(os.path.join(self.src, "big.bin"))
        with open(os.path.join(d, "stray.txt"), "w") as f:
            f.write("left by a trainer")
        with open(os.path.join(d, "best.pt"), "w") as f:
            f.write("a checkpoint written there")
        os.makedirs(os.path.join(d, ".git"))
        _, _, _, deleted = self.sync()
        self.assertEqual(deleted, 0)
        self.assertTrue(os.path.exists(os.path.join(d, "big.bin")))
        _, files, sent, deleted = self.sync("--sync-delete")
        self.assertEqual((files, sent, deleted), (0, 0, 2))
        self.assertFalse(os.path.exists(os.path.join(d, "big.bin")))
        self.assertFalse(os.path.exists(os.path.join(d, "stray.txt")))
        self.assertTrue(os.path.exists(os.path.join(d, "best.pt")))
        self.assertTrue(os.path.isdir(os.path.join(d, ".git")))

    def test_dry_run_and_the_default_destination(self):
        r = self.hosts.dlaunch(["--dry-run", "--hosts", self.hosts_file, "--sync", self.src,
                          "--sync-delete", "--", "prog"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("workdir: ~/project (--sync; created when missing)", r.stdout)
        self.assertIn(f"sync: {self.src} -> ~/project on every host", r.stdout)
        self.assertIn("5 files, 2 symlinks, 2 directories", r.stdout)
        self.assertIn("3 ignored", r.stdout)
        self.assertIn("--sync-delete", r.stdout)

    def test_a_sync_that_cannot_complete_fails_before_any_rank_starts(self):
        # A non-empty directory where the tree has a file: refused without
        # --sync-delete, and the ranks never start.
        os.makedirs(os.path.join(self.dest, "big.bin", "inside"))
        marker = os.path.join(self.hosts.tmp, "rank-started")
        r = self.hosts.dlaunch(["--hosts", self.hosts_file, "--sync", self.src, "--workdir", self.dest,
                          "--", "touch", marker])
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("--sync to h1 failed: big.bin: a non-empty directory is in the way", r.stderr)
        self.assertFalse(os.path.exists(marker))


class SharedDestinationTest(WithHosts):
    """Hosts whose destination is one directory (two hosts on one machine, or
    an NFS home on a cluster): the tree is written by one of them while the
    others wait and then find it in place. Before, the agents raced: a
    directory one of them created was "File exists" to the other."""

    HOSTS = 2

    def setUp(self):
        self.src = os.path.join(self.hosts.tmp, "shared-src")
        self.dest = os.path.join(self.hosts.tmp, "shared", "run")
        for d in (self.src, os.path.join(self.hosts.tmp, "shared")):
            shutil.rmtree(d, ignore_errors=True)
        for i in range(20):
            os.makedirs(os.path.join(self.src, f"sub{i}", "deeper"))
            with open(os.path.join(self.src, f"sub{i}", "deeper", "f.txt"), "w") as f:
                f.write(f"file {i}\n")
        with open(os.path.join(self.src, "top.txt"), "w") as f:
            f.write("top\n")
        # Large enough that the hosts' transfers overlap in time.
        with open(os.path.join(self.src, "weights.bin"), "wb") as f:
            f.write(os.urandom(32 * 1024 * 1024))

    def run_shared(self, hosts_file):
        r = subprocess.run(
            [harness.DLAUNCH, "-v", "--hosts", hosts_file, "--sync", self.src, "--workdir",
             self.dest, "--", "cat", "sub7/deeper/f.txt"],
            capture_output=True, text=True, timeout=120, env=self.hosts.env())
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.count("file 7"), 2, r.stdout)
        written = sorted(int(files) for _, files, _, _ in SYNCED.findall(r.stderr))
        return r, written

    def check_shared(self, hosts_file):
        for run in range(3):
            shutil.rmtree(os.path.join(self.hosts.tmp, "shared"), ignore_errors=True)
            r, written = self.run_shared(hosts_file)
            # 22 files, sent once: one host wrote them, the other found them.
            self.assertEqual(written, [0, 22], r.stderr)
            for i in range(20):
                with open(os.path.join(self.dest, f"sub{i}", "deeper", "f.txt")) as f:
                    self.assertEqual(f.read(), f"file {i}\n")
            left = [n for n in os.listdir(self.dest) if n.startswith(".dlaunch-sync-")]
            self.assertEqual(left, [], "markers or temporary files left behind")
        # Everything in place already: neither host writes anything.
        _, written = self.run_shared(hosts_file)
        self.assertEqual(written, [0, 0])

    def test_two_ssh_hosts_share_the_destination(self):
        self.check_shared(self.hosts.hosts_file([1, 1], name="shared.toml"))

    def test_two_local_nodes_share_the_destination(self):
        path = os.path.join(self.hosts.tmp, "local.toml")
        with open(path, "w") as f:
            f.write('[[host]]\nname = "node0"\naddress = "127.0.0.1"\nslots = 1\n\n'
                    '[[host]]\nname = "node1"\naddress = "127.0.0.1"\nslots = 1\n')
        self.check_shared(path)


if __name__ == "__main__":
    harness.require_binaries()
    harness.main(verbosity=2)
