"""dlaunch over real OpenSSH servers that the test starts itself (one network
namespace per host with a 198.18.x.x address when root, loopback ports
otherwise): uneven slots, host key checks, authentication errors, unreachable
hosts, the cached agent upload, and arguments that reach the rank byte for byte."""

import os
import random
import re
import shutil
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
import sshd_harness  # noqa: E402

# A rank that writes its RANK, LOCAL_RANK, WORLD_SIZE, host and argv (hex) to a file.
DUMP = ("import os, sys\n"
        "out = os.path.join(sys.argv[1], 'rank-' + os.environ['RANK'])\n"
        "with open(out, 'w') as f:\n"
        "    f.write(' '.join([os.environ['RANK'], os.environ['LOCAL_RANK'], os.environ['WORLD_SIZE'],\n"
        "                      os.environ['DLAUNCH_HOST']] + [os.fsencode(a).hex() for a in sys.argv[2:]]))\n")


class SshHostsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.hosts = sshd_harness.SshHosts(3)
        cls.hosts.__enter__()
        if not cls.hosts.netns:
            print("note: not root or no `ip netns`: sshd servers listen on loopback ports instead")

    @classmethod
    def tearDownClass(cls):
        cls.hosts.close()

    def setUp(self):
        self.hosts.write_known_hosts()
        self.out = os.path.join(self.hosts.tmp, f"out-{random.randint(0, 1 << 30)}")
        os.makedirs(self.out)

    def dump_cmd(self, *args):
        return ["/usr/bin/python3", "-c", DUMP, self.out, *args]

    def records(self):
        recs = {}
        for name in os.listdir(self.out):
            with open(os.path.join(self.out, name)) as f:
                fields = f.read().split(" ")
            recs[int(fields[0])] = fields
        return recs

    def test_three_hosts_uneven_slots_every_rank_once(self):
        hosts_file = self.hosts.hosts_file([1, 2, 3])
        r = self.hosts.dlaunch(["--hosts", hosts_file, "--"] + self.dump_cmd())
        self.assertEqual(r.returncode, 0, r.stderr)
        recs = self.records()
        self.assertEqual(sorted(recs), list(range(6)))
        self.assertEqual([recs[i][3] for i in range(6)], ["h1", "h2", "h2", "h3", "h3", "h3"])
        self.assertEqual([recs[i][1] for i in range(6)], ["0", "0", "1", "0", "1", "2"])
        self.assertEqual({recs[i][2] for i in range(6)}, {"6"})

    def test_arguments_reach_the_rank_byte_for_byte(self):
        args = ["two words", "it's", 'say "hi"', "$(touch /tmp/pwned)", "`id`", "a\nb", "tab\there",
                "ünïcødé ✓", "*", "~", ";", "|", "&&", "--", "-n", "", "\\", "$HOME", "'\"'"]
        rng = random.Random(7)
        for _ in range(20):  # random byte strings (no NUL: argv cannot hold one)
            raw = bytes(rng.randrange(1, 256) for _ in range(rng.randrange(1, 40)))
            args.append(os.fsdecode(raw))
        r = self.hosts.dlaunch(["--hosts", self.hosts.hosts_file([1, 1, 1]), "--"] + self.dump_cmd(*args))
        self.assertEqual(r.returncode, 0, r.stderr)
        want = [os.fsencode(a).hex() for a in args]
        for rank, fields in self.records().items():
            self.assertEqual(fields[4:], want, f"rank {rank} got different arguments")

    def test_unknown_host_key_refused_then_accepted_with_flag(self):
        known = self.hosts.write_known_hosts(self.hosts.hosts[:2])  # h3 unknown
        hosts_file = self.hosts.hosts_file([1, 1, 1])
        r = self.hosts.dlaunch(["--hosts", hosts_file, "--", "true"])
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("h3: unknown host key", r.stderr)
        self.assertIn("--accept-new-host-keys", r.stderr)
        self.assertIn("SHA256:", r.stderr)
        r = self.hosts.dlaunch(["--hosts", hosts_file, "--accept-new-host-keys", "--", "true"])
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(known) as f:
            self.assertEqual(len(f.read().splitlines()), 3)
        r = self.hosts.dlaunch(["--hosts", hosts_file, "--", "true"])  # now known
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_hashed_known_hosts_entries_are_honoured(self):
        known = self.hosts.write_known_hosts()
        sshd_harness.sh("ssh-keygen", "-H", "-f", known)
        with open(known) as f:
            self.assertTrue(all(line.startswith("|1|") for line in f.read().splitlines()))
        r = self.hosts.dlaunch(["--hosts", self.hosts.hosts_file([1, 1, 1]), "--", "true"])
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_changed_host_key_is_always_refused(self):
        victim = self.hosts.hosts[1]
        self.hosts.restart_with_new_host_key(victim)
        try:
            hosts_file = self.hosts.hosts_file([1, 1, 1])
            for flags in ([], ["--accept-new-host-keys"]):
                r = self.hosts.dlaunch(["--hosts", hosts_file, *flags, "--", "true"])
                self.assertNotEqual(r.returncode, 0)
                self.assertIn("h2: HOST KEY CHANGED", r.stderr)
                self.assertIn("ssh-keygen -R", r.stderr)
        finally:
            with open(victim["key_file"] + ".pub") as f:
                victim["host_key_pub"] = " ".join(f.read().split()[:2])

    def test_wrong_client_key_is_refused_with_the_methods_tried(self):
        home = os.path.join(self.hosts.tmp, "other-home")
        os.makedirs(os.path.join(home, ".ssh"), exist_ok=True)
        shutil.copy(os.path.join(self.hosts.home, ".ssh", "known_hosts"), os.path.join(home, ".ssh"))
        wrong = os.path.join(home, ".ssh", "id_ed25519")
        if not os.path.exists(wrong):
            sshd_harness.sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", wrong)
        r = self.hosts.dlaunch(["--hosts", self.hosts.hosts_file([1, 1, 1]), "--", "true"],
                               HOME=home)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("authentication as root@", r.stderr)
        self.assertIn(wrong, r.stderr)
        self.assertIn("authorized_keys", r.stderr)

    def test_unreachable_host_fails_fast_naming_it(self):
        hosts_file = self.hosts.hosts_file([1, 1])
        if self.hosts.netns:
            dead = f"{self.hosts.subnet}.200"  # on the bridge, nobody there
            port = 22
        else:
            dead, port = "127.0.0.1", harness.free_port()
        with open(hosts_file, "a") as f:
            f.write(f'[[host]]\nname = "ghost"\naddress = "{dead}"\nport = {port}\nuser = "root"\n')
        # The healthy hosts' ranks would sleep for an hour: a job that waited
        # for them would not end within the run's 120 s (a bound that only
        # ends a hang).
        r = self.hosts.dlaunch(["--hosts", hosts_file, "--ssh-timeout", "2", "--", "sleep",
                                "3600"])
        self.assertNotEqual(r.returncode, 0)
        # The reason says the connect was given up after --ssh-timeout's 2 s
        # (the kernel's own SYN retries last minutes), or that the bridge found
        # no one at the address first (ARP gives up after about 3 s); without
        # namespaces the closed port refuses at once.
        reason = r"(timed out after 2 s|No route to host)" if self.hosts.netns \
            else "Connection refused"
        self.assertRegex(r.stderr, rf"failed: ghost: cannot connect to {re.escape(dead)}:{port}: "
                                   rf"{reason} \(")
        # The healthy hosts' agents were stopped on purpose: they add no error of their own.
        self.assertNotIn("closed this agent's input", r.stderr)
        self.assertNotIn("agent] dlaunch-agent: error", r.stderr)

    def test_agent_upload_is_skipped_on_the_second_run(self):
        shutil.rmtree(self.hosts.remote_cache, ignore_errors=True)
        hosts_file = self.hosts.hosts_file([1, 1, 1])
        r = self.hosts.dlaunch(["-v", "--hosts", hosts_file, "--", "true"])
        self.assertEqual(r.returncode, 0, r.stderr)
        # The three "hosts" are this machine and share the cache directory, so
        # a host may find the copy another one has just uploaded.
        uploads = r.stderr.count("uploaded the agent")
        self.assertGreaterEqual(uploads, 1, r.stderr)
        self.assertEqual(uploads + r.stderr.count("agent already on host"), 3, r.stderr)
        cached = os.listdir(self.hosts.remote_cache)
        self.assertEqual(len(cached), 1)
        self.assertTrue(cached[0].startswith("agent-"))
        agent = os.path.join(self.hosts.remote_cache, cached[0])
        self.assertEqual(os.stat(agent).st_mode & 0o777, 0o755)
        mtime = os.stat(agent).st_mtime_ns
        r = self.hosts.dlaunch(["-v", "--hosts", hosts_file, "--", "true"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stderr.count("uploaded the agent"), 0, r.stderr)
        self.assertEqual(r.stderr.count("agent already on host"), 3, r.stderr)
        self.assertEqual(os.stat(agent).st_mtime_ns, mtime)
        self.assertEqual(os.listdir(self.hosts.remote_cache), cached)  # no temporary files left


if __name__ == "__main__":
    harness.require_binaries()
    sshd_harness.require_sshd()
    harness.main(verbosity=2)
