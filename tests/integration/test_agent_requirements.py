"""What the uploaded agent asks of a host, read off the built binaries.

The agent must start on any Linux host of its architecture whatever the libc
(README, "What the agent needs"): it is fully static, and the GPU helper it
carries (a small dynamic program that loads NVML, CUDA and NCCL) asks glibc
for nothing newer than the baseline, 2.17. A change that links the agent
against a shared library, or lets the helper bind a newer glibc symbol,
fails here and names it."""

import os
import re
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402

GLIBC_BASELINE = (2, 17)
HELPER_LIBRARIES = {"libc.so.6", "libdl.so.2"}
MACHINES = {"x86_64": "Advanced Micro Devices X86-64", "aarch64": "AArch64"}


def readelf(*args):
    return subprocess.run(["readelf", "-W", *args], capture_output=True, text=True,
                          check=True).stdout


def needed(path):
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", readelf("-d", path))


def glibc_versions(path):
    """Each symbol the binary takes from glibc, with the version it binds."""
    out = readelf("--dyn-syms", path)
    found = []
    for line in out.splitlines():
        m = re.search(r"UND\s+(\S+?)@GLIBC_([0-9.]+)", line)
        if m:
            found.append((m.group(1), tuple(int(x) for x in m.group(2).split("."))))
    return found


class AgentRequirements(unittest.TestCase):
    def setUp(self):
        harness.require_binaries("dlaunch-agent", "dlaunch-gpu-helper")
        self.agent = harness.AGENT
        self.helper = os.path.join(harness.BIN_DIR, "dlaunch-gpu-helper")
        self.sanitized = bool(os.environ.get("DLAUNCH_SANITIZE"))

    def test_the_agent_is_static(self):
        if self.sanitized:
            self.skipTest("sanitizer build: its agent is dynamic, and never uploaded from it")
        headers = readelf("-l", self.agent)
        self.assertNotIn("INTERP", headers,
                         f"{self.agent} asks for a dynamic loader: it would not start on a "
                         "host whose libc differs")
        self.assertEqual(needed(self.agent), [],
                         f"{self.agent} needs shared libraries")
        self.assertEqual(glibc_versions(self.agent), [])

    def test_the_agent_starts_with_no_environment(self):
        out = subprocess.run(["env", "-i", self.agent, "--version"], capture_output=True,
                             text=True, timeout=10)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertTrue(out.stdout.startswith("dlaunch-agent "), out.stdout)

    def test_the_gpu_helper_asks_glibc_for_the_baseline_only(self):
        libraries = set(needed(self.helper))
        self.assertLessEqual(libraries, HELPER_LIBRARIES,
                             f"the GPU helper needs {sorted(libraries - HELPER_LIBRARIES)}")
        versions = glibc_versions(self.helper)
        self.assertTrue(versions, "the GPU helper binds no glibc symbol: is it built?")
        newer = [f"{name}@GLIBC_{'.'.join(map(str, v))}" for name, v in versions
                 if v > GLIBC_BASELINE]
        self.assertEqual(newer, [], "the GPU helper binds glibc symbols newer than 2.17 "
                         "(pin them in agent/gpu_helper/glibc_baseline.h)")

    def test_both_are_built_for_this_machine(self):
        machine = MACHINES.get(os.uname().machine)
        if machine is None:
            self.skipTest(f"unsupported machine: no expected ELF machine for "
                          f"{os.uname().machine}")
        for path in (self.agent, self.helper):
            self.assertIn(f"Machine:                           {machine}", readelf("-h", path),
                          path)


if __name__ == "__main__":
    harness.main(verbosity=2)
