"""Host lists other than the TOML hosts file, seen through the real binary's
--dry-run: a DeepSpeed/MPI hostfile, Horovod's -H, DeepSpeed's --include and
--exclude with GPU indices (CUDA_VISIBLE_DEVICES on the right hosts only), and
a Slurm job's variables. Bad input exits 2 naming FILE:LINE or the variable.
Nothing is started and nothing touches the network."""

import os
import re
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import DlaunchTestCase  # noqa: E402

EXIT_USAGE = 2
NODE = re.compile(r"^node (\d+): (\S+) \((\S+), (\w+)[^)]*\), (.*)$")
RANK = re.compile(r"^  local rank (\d+):(.*)$")


def parse_plan(text):
    """[(name, ranks text, [env of each local rank])] from a --dry-run plan."""
    nodes = []
    for line in text.splitlines():
        m = NODE.match(line)
        if m:
            nodes.append((m.group(2), m.group(5), []))
            continue
        m = RANK.match(line)
        if m and nodes:
            env = dict(re.findall(r"(\w+)=(<[^>]*>|\S*)", m.group(2)))
            nodes[-1][2].append(env)
    return nodes


class HostListsTest(DlaunchTestCase):
    def env(self, **extra):
        # Only the Slurm variables a case sets: the test may itself run in a Slurm job.
        env = {k: v for k, v in super().env().items() if not k.startswith("SLURM_")}
        env.update(extra)
        return env

    def dry_run(self, args, **env):
        p = self.run_dlaunch(list(args) + ["--dry-run", "--", "/bin/true"], timeout=30,
                             env=self.env(**env), cwd=self.tmp)
        self.assertEqual(p.returncode, 0, p.stderr)
        return p, parse_plan(p.stdout)

    def usage_error(self, args, **env):
        p = self.run_dlaunch(list(args) + ["--dry-run", "--", "/bin/true"], timeout=30,
                             env=self.env(**env), cwd=self.tmp)
        self.assertEqual(p.returncode, EXIT_USAGE, p.stderr)
        self.assertEqual(p.stdout, "")
        return p.stderr

    def assertHosts(self, nodes, expected):
        """expected: [(name, ranks text)]."""
        self.assertEqual([(n, r) for n, r, _ in nodes], expected)

    def test_hostfile(self):
        path = self.write("hostfile", "# two workers\nw1 slots=2  # first\n\nw2 slots=1\nw3\n")
        _, nodes = self.dry_run(["--hostfile", path])
        # w3's rank count is found on w3, so the rank numbers wait for the rendezvous.
        self.assertHosts(nodes, [("w1", "2 ranks"), ("w2", "1 ranks"),
                                 ("w3", "one rank per GPU found there (else 1)")])

    def test_hostfile_with_every_slot_known(self):
        path = self.write("hostfile", "w1 slots=2\nw2 slots=1 max_slots=4\n")
        p, nodes = self.dry_run(["--hostfile", path])
        self.assertHosts(nodes, [("w1", "ranks 0..1"), ("w2", "ranks 2..2")])
        self.assertEqual([env["RANK"] for env in nodes[1][2]], ["2"])
        self.assertEqual(nodes[0][2][1]["WORLD_SIZE"], "3")
        # max_slots is noted once, with where it is.
        self.assertEqual(p.stderr.count("max_slots"), 1, p.stderr)
        self.assertIn(f"{path}:2: max_slots is ignored", p.stderr)

    def test_horovod_host_list(self):
        _, nodes = self.dry_run(["-H", "h1:2,h2:3"])
        self.assertHosts(nodes, [("h1", "ranks 0..1"), ("h2", "ranks 2..4")])
        _, nodes = self.dry_run(["--host-list", "localhost:2"])
        self.assertHosts(nodes, [("localhost", "ranks 0..1")])
        # One name too long to be a path is still a host (deepspeed's -H FILE
        # is looked for first; the failed look is no crash).
        long_name = "h" * 5000
        _, nodes = self.dry_run(["-H", long_name])
        self.assertEqual([n for n, _, _ in nodes], [long_name])

    def test_include_with_gpu_indices(self):
        path = self.write("hostfile", "a slots=4\nb slots=4\nc slots=4\n")
        _, nodes = self.dry_run(["--hostfile", path, "--include", "a:1,3@c"])
        self.assertHosts(nodes, [("a", "ranks 0..1"), ("c", "ranks 2..5")])
        self.assertEqual([env.get("CUDA_VISIBLE_DEVICES") for env in nodes[0][2]], ["1,3", "1,3"])
        self.assertTrue(all("CUDA_VISIBLE_DEVICES" not in env for env in nodes[1][2]))

    def test_exclude_hosts_and_gpus(self):
        _, nodes = self.dry_run(["-H", "a:4,b:4,c:2", "--exclude", "a@b:0,2"])
        self.assertHosts(nodes, [("b", "ranks 0..1"), ("c", "ranks 2..3")])
        self.assertEqual([env.get("CUDA_VISIBLE_DEVICES") for env in nodes[0][2]], ["1,3", "1,3"])
        self.assertTrue(all("CUDA_VISIBLE_DEVICES" not in env for env in nodes[1][2]))

    def test_slurm_variables(self):
        slurm = dict(SLURM_JOB_ID="1", SLURM_JOB_NODELIST="n[01-02],gpu[1-2]x",
                     SLURM_TASKS_PER_NODE="2(x3),1")
        _, nodes = self.dry_run([], **slurm)
        self.assertHosts(nodes, [("n01", "ranks 0..1"), ("n02", "ranks 2..3"),
                                 ("gpu1x", "ranks 4..5"), ("gpu2x", "ranks 6..6")])
        self.assertEqual(nodes[3][2][0]["WORLD_SIZE"], "7")
        # The same with the launcher named, and the filters on Slurm's nodes.
        _, nodes = self.dry_run(["--launcher", "slurm", "--exclude", "n02@gpu1x"], **slurm)
        self.assertHosts(nodes, [("n01", "ranks 0..1"), ("gpu2x", "ranks 2..2")])

    def test_slurm_hostlist_shapes(self):
        cases = [
            ("r[1-2]n[01-02]", ["r1n01", "r1n02", "r2n01", "r2n02"]),
            ("gpu[08-10,12]", ["gpu08", "gpu09", "gpu10", "gpu12"]),
            ("a,b[1,3],c", ["a", "b1", "b3", "c"]),
            ("login1", ["login1"]),
        ]
        for nodelist, names in cases:
            with self.subTest(nodelist):
                _, nodes = self.dry_run(["--launcher", "slurm"], SLURM_JOB_NODELIST=nodelist,
                                        SLURM_NTASKS_PER_NODE="1")
                self.assertEqual([n for n, _, _ in nodes], names)

    def test_slurm_gpus_on_node_and_explicit_nproc(self):
        slurm = dict(SLURM_JOB_ID="9", SLURM_JOB_NODELIST="g[1-2]", SLURM_GPUS_ON_NODE="4",
                     SLURM_TASKS_PER_NODE="1(x2)")
        _, nodes = self.dry_run([], **slurm)
        self.assertHosts(nodes, [("g1", "ranks 0..3"), ("g2", "ranks 4..7")])
        _, nodes = self.dry_run(["--nproc-per-node", "2"], **slurm)
        self.assertHosts(nodes, [("g1", "ranks 0..1"), ("g2", "ranks 2..3")])
        # --launcher local keeps a Slurm job's dlaunch on this machine.
        _, nodes = self.dry_run(["--launcher", "local", "-n", "1"], **slurm)
        self.assertHosts(nodes, [("localhost", "ranks 0..0")])

    def test_bad_hostfile_names_file_and_line(self):
        path = self.write("hostfile", "# workers\nw1 slots=2\nw2 slots=two\n")
        stderr = self.usage_error(["--hostfile", path])
        self.assertIn(f"{path}:3:", stderr)
        self.assertIn("slots must be", stderr)
        path = self.write("dup", "w1 slots=2\nw2\nw1 slots=1\n")
        stderr = self.usage_error(["--hostfile", path])
        self.assertIn(f"{path}:3:", stderr)
        self.assertIn("first on line 1", stderr)
        path = self.write("key", "w1 slot=2\n")
        self.assertIn("did you mean 'slots'?", self.usage_error(["--hostfile", path]))

    def test_bad_host_list_and_filters(self):
        self.assertIn("-H: bad host 'b:x'", self.usage_error(["-H", "a:2,b:x"]))
        stderr = self.usage_error(["-H", "a:2,b:2", "--include", "c"])
        self.assertIn("--include: no host 'c' in -H", stderr)
        stderr = self.usage_error(["-H", "a:2", "--exclude", "a:2"])
        self.assertIn("no GPU 2", stderr)
        stderr = self.usage_error(["-H", "a", "--hostfile", self.write("h", "a\n")])
        self.assertIn("both name the hosts", stderr)

    def test_bad_slurm_variables(self):
        stderr = self.usage_error([], SLURM_JOB_ID="1", SLURM_JOB_NODELIST="n[01-02")
        self.assertIn("SLURM_JOB_NODELIST: 'n[01-02' is not a hostlist", stderr)
        stderr = self.usage_error([], SLURM_JOB_ID="1", SLURM_JOB_NODELIST="n[5-3]")
        self.assertIn("SLURM_JOB_NODELIST", stderr)
        self.assertIn("ends below its start", stderr)
        stderr = self.usage_error([], SLURM_JOB_ID="1", SLURM_JOB_NODELIST="n[1-200000]")
        self.assertIn("more than 100000 hosts", stderr)
        stderr = self.usage_error(["--launcher", "slurm"])
        self.assertIn("SLURM_JOB_NODELIST: is not set", stderr)
        stderr = self.usage_error([], SLURM_JOB_ID="1", SLURM_JOB_NODELIST="n[1-3]",
                                  SLURM_TASKS_PER_NODE="2(x2)")
        self.assertIn("SLURM_TASKS_PER_NODE: '2(x2)'", stderr)

    def test_help_lists_the_flags(self):
        p = self.run_dlaunch(["--help"], timeout=30)
        self.assertEqual(p.returncode, 0, p.stderr)
        for flag in ["--hostfile", "-H,--host-list", "--include", "--exclude", "--launcher"]:
            self.assertIn(flag, p.stdout)
        p = self.run_dlaunch(["check", "--help"], timeout=30)
        for flag in ["--hosts", "--hostfile", "--host-list", "--include", "--exclude"]:
            self.assertIn(flag, p.stdout)


if __name__ == "__main__":
    harness.require_binaries("dlaunch")
    harness.main(verbosity=2)
