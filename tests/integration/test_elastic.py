"""Elastic jobs over SSH hosts in network namespaces: a spare takes the place
of a node whose agent is killed or whose link goes down, --nnodes MIN:MAX
starts without a host that never comes, and a job below MIN fails naming the
hosts it lost. Each rank prints its torchrun variables, so the test reads the
node ranks, world size, round and MASTER_ADDR of every round from the output."""

import os
import re
import signal
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from elastic_case import ElasticCase, rounds_of  # noqa: E402
from harness import wait_for  # noqa: E402

PY = "/usr/bin/python3"
# Rounds before the first argument run until stopped; later rounds end at once,
# so the job succeeds once such a round runs without a fault. Once its line is
# out, a rank marks ROUND-RANK in the directory of the second argument (the
# test hosts share this machine's files).
RANK = r"""
import os, sys, time
e = os.environ
long_rounds = int(sys.argv[1])
print(f"round={e['TORCHELASTIC_RESTART_COUNT']} rank={e['RANK']} group={e['GROUP_RANK']} "
      f"world={e['WORLD_SIZE']} master={e['MASTER_ADDR']}", flush=True)
open(os.path.join(sys.argv[2], e['TORCHELASTIC_RESTART_COUNT'] + "-" + e['RANK']), "w").close()
time.sleep(120 if int(e['TORCHELASTIC_RESTART_COUNT']) < long_rounds else 1)
"""
# A torch DDP trainer (gloo) that survives rounds as docs/elastic.md says: rank
# 0 saves a checkpoint after each step into the directory of the first
# argument, and every round resumes from it. A step takes a second, so a test
# can kill a node mid-training; the last step's weights are printed.
DDP = r"""
import os, sys, threading, time, torch, torch.distributed as dist
dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
path = os.path.join(sys.argv[1], "checkpoint.pt")
start = 0
if os.path.exists(path):
    state = torch.load(path)
    model.module.load_state_dict(state["model"])
    opt.load_state_dict(state["opt"])
    start = state["step"] + 1
print(f"round={os.environ['TORCHELASTIC_RESTART_COUNT']} rank={rank} world={world} "
      f"resumes at step {start}", flush=True)
open(os.path.join(sys.argv[1], f"{os.environ['TORCHELASTIC_RESTART_COUNT']}-{rank}"), "w").close()


def stuck_here():
    threading.Event().wait()


for step in range(start, 6):
    # HANG_STEP: rank 1 of the first round blocks there for ever, the others
    # in the next all-reduce.
    if (step == int(os.environ.get("HANG_STEP", "-1")) and rank == 1
            and os.environ["TORCHELASTIC_RESTART_COUNT"] == "0"):
        stuck_here()
    x = torch.full((8, 4), float(step + 1))
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    if rank == 0:
        torch.save({"model": model.module.state_dict(), "opt": opt.state_dict(), "step": step},
                   path + ".tmp")
        os.replace(path + ".tmp", path)
    dist.barrier()
    time.sleep(1)
print(f"rank={rank} done weight_sum={float(sum(p.sum() for p in model.parameters())):.6f}",
      flush=True)
"""
class ElasticTest(ElasticCase):
    def start(self, hosts_file, *args, long_rounds=1):
        cmd = [harness.DLAUNCH, "--hosts", hosts_file, "--name", self.job, "--grace", "2",
               "--heartbeat-timeout", "4", "--max-restarts", "2", *args, "--", PY, "-c", RANK,
               str(long_rounds), self.marks]
        self.proc = subprocess.Popen(cmd, env=self.hosts.env(), stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)

    def wait_ranks(self, count, round_=0):
        """Until `count` ranks of the round have printed their line."""
        self.assertTrue(wait_for(lambda: self.round_running(round_, count), 60),
                        f"{count} ranks of round {round_} did not start")

    def ranks(self):
        return [p for p in harness.processes_with_marker(self.job)
                if harness.exe_name(p).startswith("python")]

    def rank_pid(self, rank, round_=0):
        want = {f"RANK={rank}".encode(), f"TORCHELASTIC_RESTART_COUNT={round_}".encode()}
        for pid in self.ranks():
            try:
                with open(f"/proc/{pid}/environ", "rb") as f:
                    if want <= set(f.read().split(b"\0")):
                        return pid
            except OSError:
                pass
        self.fail(f"no process of rank {rank} in round {round_}")

    def round_running(self, round_, count):
        return sum(name.startswith(f"{round_}-") for name in os.listdir(self.marks)) >= count

    def spare_hosts_file(self, name, spare="h4"):
        return self.hosts.hosts_file([1, 1, 1, 1], name=name,
                                     host_extra={spare: "spare = true"})

    def test_spare_takes_node_1_when_its_agent_is_killed(self):
        self.start(self.spare_hosts_file("spare.toml"))
        self.wait_ranks(3)
        agent = harness.parent_of(self.rank_pid(1))
        killed_at = time.monotonic()
        os.kill(agent, signal.SIGKILL)
        self.wait_ranks(3, round_=1)
        print(f"kill -9 of node 1's agent to every rank of round 1 running: "
              f"{time.monotonic() - killed_at:.2f} s")
        code, out, err = self.finish()
        self.assertEqual(code, 0, err)
        self.assertRegex(err, r"dlaunch: h4 takes node 1 of h2 \((lost the agent of h2|the agent on "
                              r"h2 exited)")
        rounds = rounds_of(out)
        # Round 0 ran on h1..h3; round 1 has the same ranks, rank 1 on the spare.
        self.assertEqual({r: v[0] for r, v in rounds[0].items()}, {0: "h1", 1: "h2", 2: "h3"})
        self.assertEqual(rounds[1][1][:3], ("h4", 1, 3))
        self.assertEqual(rounds[1][0][0], "h1")
        self.assertEqual(rounds[1][2][:2], ("h3", 2))
        self.assertEqual(set(rounds), {0, 1})
        # The dead host runs nothing afterwards.
        self.assertEqual(self.in_namespace(self.hosts.hosts[1]), [])
        self.assertEqual(harness.wait_no_marker(self.job, 30), [])
        # `get` tells the story; the record says who ran the last round.
        got = self.hosts.dlaunch(["get", self.job])
        self.assertEqual(got.returncode, 0, got.stderr)
        self.assertIn("history:", got.stdout)
        self.assertRegex(got.stdout, r"round 1  h4 takes node 1 of h2")
        self.assertRegex(got.stdout, r"round 1  round 1 runs on 3 nodes")
        self.assertRegex(got.stdout, r"\n  h2 +- +- +\d+ +retired\n")
        self.assertRegex(got.stdout, r"\n  h4 +1 +1 ")
        listed = self.hosts.dlaunch(["list", "--all"])
        self.assertRegex(listed.stdout, rf"{self.job} +SUCCEEDED +3 +3 +1 ")

    def test_spare_becomes_node_0_when_node_0_link_goes_down(self):
        self.start(self.spare_hosts_file("spare0.toml"))
        self.wait_ranks(3)
        self.cut = self.hosts.hosts[0]["ns"]
        cut_at = time.monotonic()
        subprocess.run(["ip", "netns", "exec", self.cut, "ip", "link", "set", "eth0", "down"],
                       check=True)
        self.wait_ranks(3, round_=1)
        print(f"link down to every rank of round 1 running (heartbeat timeout 4 s): "
              f"{time.monotonic() - cut_at:.2f} s")
        code, out, err = self.finish()
        self.assertEqual(code, 0, err)
        self.assertIn("dlaunch: h4 takes node 0 of h1", err)
        rounds = rounds_of(out)
        self.assertEqual(rounds[0][0][3], self.hosts.hosts[0]["address"])
        # The new node 0 is the spare, and MASTER_ADDR was probed again: its address.
        self.assertEqual(rounds[1][0][:2], ("h4", 0))
        for rank in (0, 1, 2):
            self.assertEqual(rounds[1][rank][3], self.hosts.hosts[3]["address"], out)
        print(f"link down to job done: {time.monotonic() - cut_at:.1f} s")

    def test_torch_ddp_resumes_on_the_spare_from_its_checkpoint(self):
        hosts_file = self.hosts.hosts_file([1, 1, 1], name="ddp.toml",
                                           host_extra={"h3": "spare = true"})
        cmd = [harness.DLAUNCH, "--hosts", hosts_file, "--name", self.job, "--grace", "2",
               "--heartbeat-timeout", "4", "--max-restarts", "2", "--", PY, "-c", DDP, self.marks]
        self.proc = subprocess.Popen(cmd, env=self.hosts.env(), stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        self.wait_ranks(2)
        # Mid-training: once a checkpoint exists, node 1's agent dies.
        checkpoint = os.path.join(self.marks, "checkpoint.pt")
        self.assertTrue(wait_for(lambda: os.path.exists(checkpoint), 120), "no checkpoint")
        os.kill(harness.parent_of(self.rank_pid(1)), signal.SIGKILL)
        code, out, err = self.finish()
        self.assertEqual(code, 0, err)
        self.assertIn("dlaunch: h3 takes node 1 of h2", err)
        resumed = re.findall(r"^\[(\S+):(\d)\] round=1 rank=\d world=2 resumes at step (\d)$",
                             out, re.M)
        self.assertEqual(sorted(h for h, _, _ in resumed), ["h1", "h3"], out)
        self.assertGreater(int(resumed[0][2]), 0, out)  # from the checkpoint, not from scratch
        done = re.findall(r"^\[(\S+):(\d)\] rank=\d done weight_sum=(\S+)$", out, re.M)
        self.assertEqual(len(done), 2, out)
        self.assertEqual(done[0][2], done[1][2])  # DDP kept both replicas equal
        print(f"resumed at step {resumed[0][2]}")

    def test_a_hung_rank_s_node_is_retired_and_the_spare_resumes_from_the_checkpoint(self):
        hosts_file = self.hosts.hosts_file([1, 1, 1], name="hang.toml",
                                           host_extra={"h3": "spare = true"})
        cmd = [harness.DLAUNCH, "--hosts", hosts_file, "--name", self.job, "--grace", "2",
               "--heartbeat-timeout", "4", "--max-restarts", "2", "--hang-timeout", "8s",
               "--env", "HANG_STEP=2", "--", PY, "-c", DDP, self.marks]
        self.proc = subprocess.Popen(cmd, env=self.hosts.env(), stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        code, out, err = self.finish(timeout=180)
        self.assertEqual(code, 0, err)
        # Two ranks, two stacks: rank 0 waits in DDP's all-reduce (backward).
        self.assertIn("suspect: rank 1 on h2: its stack is in no collective, while 1 rank waits "
                      "in one (backward: ranks 0)", err)
        self.assertNotIn("not one of its ranks", err)
        self.assertIn("dlaunch: h3 takes node 1 of h2", err)
        resumed = re.findall(r"^\[(\S+):(\d)\] round=1 rank=\d world=2 resumes at step (\d)$",
                             out, re.M)
        self.assertEqual(sorted(h for h, _, _ in resumed), ["h1", "h3"], out)
        self.assertEqual(resumed[0][2], "2", out)  # from step 1's checkpoint
        done = re.findall(r"^\[(\S+):(\d)\] rank=\d done weight_sum=(\S+)$", out, re.M)
        self.assertEqual(sorted(h for h, _, _ in done), ["h1", "h3"], out)
        self.assertEqual(done[0][2], done[1][2])
        # The evidence of the hung round is kept, the suspect's stack included.
        stacks = os.path.join(self.hosts.tmp, "state", self.job, "stacks")
        taken = os.path.join(stacks, sorted(os.listdir(stacks))[0])
        with open(os.path.join(taken, "rank-1.txt")) as f:
            self.assertIn("in stuck_here", f.read())
        with open(os.path.join(taken, "rank-0.txt")) as f:
            self.assertIn("in backward", f.read())
        # Nothing of the job is left on any host, h2's stuck rank included.
        self.assertEqual(harness.wait_no_marker(self.job), [])

    def test_min_max_starts_without_a_host_that_never_comes(self):
        # h3 is listed, but nothing listens where the hosts file says it is.
        gone = dict(self.hosts.hosts[2])
        gone["address"] = f"{self.hosts.subnet}.200"
        listed = [self.hosts.hosts[0], self.hosts.hosts[1], gone]
        hosts_file = self.hosts.hosts_file([1, 1, 1], name="minmax.toml", hosts=listed)
        self.start(hosts_file, "--nnodes", "2:3", "--join-timeout", "5", "--ssh-timeout", "3")
        self.wait_ranks(2)
        # Round 0 never ends by itself: stop it once it runs, the way a user would.
        self.proc.send_signal(signal.SIGINT)
        code, out, err = self.finish()
        self.assertEqual(code, 130, err)
        self.assertRegex(err, r"h3 is out of the job|not joined: h3")
        rounds = rounds_of(out)
        self.assertEqual({r: v[0] for r, v in rounds[0].items()}, {0: "h1", 1: "h2"})
        self.assertEqual(rounds[0][1][2], 2)  # WORLD_SIZE counts the nodes that run

    def test_below_min_after_losses_fails_naming_the_lost_hosts(self):
        hosts_file = self.hosts.hosts_file([1, 1, 1], name="below.toml")
        self.start(hosts_file, "--nnodes", "2:3", long_rounds=2)
        self.wait_ranks(3)
        os.kill(harness.parent_of(self.rank_pid(2)), signal.SIGKILL)
        # Round 1 runs on h1 and h2; then h2's agent dies too.
        self.wait_ranks(2, round_=1)
        os.kill(harness.parent_of(self.rank_pid(1, round_=1)), signal.SIGKILL)
        code, out, err = self.finish()
        self.assertEqual(code, 1, err)
        self.assertIn("1 nodes are left, fewer than the 2 the job needs", err)
        self.assertRegex(err, r"h2 \((lost the agent of h2|the agent on h2 exited)")
        self.assertRegex(err, r"h3 \((lost the agent of h3|the agent on h3 exited)")
        self.assertEqual(harness.wait_no_marker(self.job, 30), [])


if __name__ == "__main__":
    harness.main()
