"""A coordinator the hosts cannot connect to (behind NAT, or firewalled):
with [rendezvous] via = "ssh" or --rdzv-via-ssh, every agent reaches the
rendezvous through a reverse port forward on its own SSH connection, and the
job runs. Each host is a network namespace whose firewall refuses every
connection it opens to the coordinator."""

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
import sshd_harness  # noqa: E402

RANK = ("import os, sys; print('rank', os.environ['RANK'], 'on', os.environ['DLAUNCH_HOST'],"
        " flush=True); sys.exit(int(sys.argv[1]) if os.environ['RANK'] == '2' else 0)")


class RendezvousViaSshTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # h3 is reachable only through h1, as a bastion.
        cls.hosts = sshd_harness.SshHosts(3, netns=True)
        cls.hosts.__enter__()
        cls.coordinator = f"{cls.hosts.subnet}.254"  # this machine, on the hosts' bridge
        h1, _, h3 = cls.hosts.hosts
        if not (all(cls.hosts.block_connections_to(h, cls.coordinator) for h in cls.hosts.hosts)
                and cls.hosts.firewall_ssh(h3, [h1["address"]])):
            why = harness.firewall_reason(h3["ns"])
            cls.hosts.close()
            raise unittest.SkipTest(why)

    @classmethod
    def tearDownClass(cls):
        cls.hosts.close()

    def setUp(self):
        self.hosts.write_known_hosts()

    def dlaunch(self, hosts_file, *args, code=0):
        return self.hosts.dlaunch(["--hosts", hosts_file, "--rdzv-timeout", "60", *args, "--",
                                   "/usr/bin/python3", "-c", RANK, str(code)])

    def test_the_firewall_keeps_hosts_from_the_coordinator(self):
        with socket.socket() as listener:
            listener.bind((self.coordinator, 0))
            listener.listen()
            port = listener.getsockname()[1]
            r = subprocess.run(
                ["ip", "netns", "exec", self.hosts.hosts[0]["ns"], "/usr/bin/python3", "-c",
                 f"import socket; socket.create_connection(('{self.coordinator}', {port}), 5)"],
                capture_output=True, text=True, timeout=30)
        self.assertNotEqual(r.returncode, 0, "the host reached the coordinator")
        self.assertIn("ConnectionRefused", r.stderr)

    def test_without_via_every_host_says_why_and_the_job_fails_without_waiting(self):
        # Each agent tells the coordinator it cannot connect; once every host
        # still missing has said so, nothing is on its way: the job fails then,
        # naming each host's error, not after --rdzv-timeout's 60 s.
        h1, h2, h3 = self.hosts.hosts
        hosts_file = self.hosts.hosts_file(
            [1, 2], hosts=[h2, h3], host_extra={"h3": f'jump = "root@{h1["address"]}"\n'})
        r = self.dlaunch(hosts_file)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("2 nodes cannot reach the rendezvous, and no other is missing:", r.stderr)
        for h in ("h2", "h3"):
            self.assertIn(f"{h}: cannot connect to {self.coordinator}:", r.stderr)
            self.assertIn(f"[{h} agent]", r.stderr)
        self.assertIn("Connection refused", r.stderr)
        self.assertIn('h3 reached through a jump host: a network that lets only SSH in needs '
                      'via = "ssh"', r.stderr)
        self.assertNotIn("timed out", r.stderr)
        self.assertNotIn("rank 0 on", r.stdout)

    def test_via_ssh_in_the_hosts_file(self):
        hosts_file = self.hosts.hosts_file([1, 2], extra='[rendezvous]\nvia = "ssh"\n\n',
                                           hosts=self.hosts.hosts[:2])
        r = self.dlaunch(hosts_file, "-v")
        self.assertEqual(r.returncode, 0, r.stderr)
        out = r.stdout + r.stderr
        for line in ("rank 0 on h1", "rank 1 on h2", "rank 2 on h2"):
            self.assertIn(line, out)
        for h in ("h1", "h2"):
            self.assertIn(f"{h}: the agent reaches the rendezvous through SSH at 127.0.0.1:", out)

    def test_via_ssh_on_the_command_line_and_a_rank_exit_code_comes_back(self):
        r = self.dlaunch(self.hosts.hosts_file([1, 2], hosts=self.hosts.hosts[:2]),
                         "--rdzv-via-ssh", code=3)
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("rank 2 on h2", r.stdout + r.stderr)

    def test_via_ssh_to_a_host_behind_a_bastion(self):
        h1, h2, h3 = self.hosts.hosts
        hosts_file = self.hosts.hosts_file(
            [1, 2], hosts=[h2, h3], host_extra={"h3": f'jump = "root@{h1["address"]}"\n'})
        r = self.dlaunch(hosts_file, "--rdzv-via-ssh")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("rank 2 on h3", r.stdout + r.stderr)

    def test_an_idle_job_through_a_bastion_and_via_ssh_leaves_the_coordinator_idle(self):
        # Every forwarded connection and the bastion's tunnel wait on their
        # sockets: with ranks that print nothing, the coordinator does no work.
        # Measured as the time its threads ran or waited for a CPU: a spinning
        # thread counts all of the 10 s whatever else loads the machine (its CPU
        # seconds would not: on a busy machine it gets a fraction of a core),
        # an idle coordinator its wake-ups, under 0.2 s with plain SSH. The
        # bound, 3 s, is far above the latter and far below the former.
        h1, h2, h3 = self.hosts.hosts
        job = f"idle-{os.getpid()}"
        ready = os.path.join(self.hosts.tmp, job)
        os.makedirs(ready, exist_ok=True)
        rank = (f"import os, time; open(os.path.join({ready!r}, os.environ['RANK']), 'w').close();"
                " time.sleep(300)")
        hosts_file = self.hosts.hosts_file(
            [1, 1], hosts=[h2, h3], host_extra={"h3": f'jump = "root@{h1["address"]}"\n'})
        proc = subprocess.Popen(
            [harness.DLAUNCH, "--hosts", hosts_file, "--rdzv-via-ssh", "--name", job, "--grace",
             "2", "--", "/usr/bin/python3", "-c", rank],
            env=self.hosts.env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            self.assertTrue(harness.wait_for(lambda: len(os.listdir(ready)) == 2, 60),
                            "the ranks did not start")
            before = harness.cpu_seconds(proc.pid), harness.runnable_seconds(proc.pid)
            time.sleep(10)
            used = harness.cpu_seconds(proc.pid) - before[0]
            busy = harness.runnable_seconds(proc.pid) - before[1]
            print(f"\n  coordinator in 10 idle seconds: {used:.2f} CPU s, running or runnable "
                  f"{busy:.2f} s", flush=True)
            self.assertLess(busy, 3.0, f"the coordinator ran or waited to run {busy:.2f} s "
                            f"({used:.2f} CPU s) in 10 idle s")
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=60)
            self.assertEqual(proc.returncode, 130, err)
            self.assertEqual(harness.wait_no_marker(job, 30), [], "ranks left behind")
        finally:
            harness.end_job_process(proc, job)


if __name__ == "__main__":
    harness.require_binaries()
    sshd_harness.require_sshd()
    # Hosts behind a firewall need namespaces.
    sshd_harness.require_netns("the rendezvous-via-SSH tests")
    if not (shutil.which("nft") or shutil.which("iptables")):
        harness.skip_file("missing: nft or iptables for the firewall in front of the "
                          "coordinator (nftables, iptables)")
    harness.main(verbosity=2)
