"""The .deb from `cpack -G DEB`: its Depends (from dpkg-shlibdeps), its files,
binaries that run from the extracted package, a man page that renders and names
every long option the binary's help prints, and completions that parse and
complete job names and hosts files.

cpack runs on the build dir's CPackConfig.cmake with its output (the package and
the _CPack_Packages staging tree) in a temp dir; the install_manifest.txt that
CMake's install step writes into the build dir is removed again when this test
made it, so the build tree keeps nothing of the run."""

import glob
import gzip
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402

BUILD_DIR = os.path.dirname(os.path.abspath(harness.BIN_DIR))
CPACK_CONFIG = os.path.join(BUILD_DIR, "CPackConfig.cmake")
INSTALL_MANIFEST = os.path.join(BUILD_DIR, "install_manifest.txt")
MAN_PAGE = "usr/share/man/man1/dlaunch.1.gz"
BASH_COMPLETION = "usr/share/bash-completion/completions/dlaunch"
ZSH_COMPLETION = "usr/share/zsh/vendor-completions/_dlaunch"
LONG_FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9_-]*")


def run(args, **kwargs):
    return subprocess.run(args, capture_output=True, text=True, timeout=120, **kwargs)


def help_texts():
    """`dlaunch --help` and `dlaunch COMMAND --help` for every listed command."""
    top = run([harness.DLAUNCH, "--help"])
    assert top.returncode == 0, top.stderr
    texts = {"dlaunch": top.stdout}
    section = top.stdout.split("Commands", 1)[1].split("\n\n", 1)[0]
    for name in re.findall(r"^  (\S+)  ", section, re.M):
        if name == "run":
            continue  # `run --help` is the top-level help
        r = run([harness.DLAUNCH, name, "--help"])
        assert r.returncode == 0, f"{name} --help: {r.stderr}"
        texts[name] = r.stdout
        # A command's own subcommands ("Subcommands:" in its help): `top node`, `top job`.
        if "\nSubcommands:\n" in r.stdout:
            block = r.stdout.split("\nSubcommands:\n", 1)[1].split("\n\n", 1)[0]
            for sub in re.findall(r"^  (\S+)  ", block, re.M):
                r = run([harness.DLAUNCH, name, sub, "--help"])
                assert r.returncode == 0, f"{name} {sub} --help: {r.stderr}"
                texts[f"{name} {sub}"] = r.stdout
    return texts


def help_flags(text):
    """The long options a help text names, leaving out a program's own options in its
    examples (those after " -- ")."""
    flags = set()
    for line in text.splitlines():
        flags.update(LONG_FLAG.findall(line.split(" -- ")[0]))
    return flags


def roff_text(source):
    """Man page source with roff's escaped hyphens and font changes undone."""
    text = source.replace("\\-", "-")
    return re.sub(r"\\f[BIRP]", "", text)


class PackageTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="dlaunch-package-")
        cls.made_manifest = not os.path.exists(INSTALL_MANIFEST)
        r = run(["cpack", "-G", "DEB", "--config", CPACK_CONFIG, "-B", cls.tmp])
        if cls.made_manifest and os.path.exists(INSTALL_MANIFEST):
            os.unlink(INSTALL_MANIFEST)
        if r.returncode != 0:
            shutil.rmtree(cls.tmp, ignore_errors=True)
            raise AssertionError(f"cpack failed:\n{r.stdout}\n{r.stderr}")
        debs = glob.glob(os.path.join(cls.tmp, "*.deb"))
        assert len(debs) == 1, f"expected one .deb in {cls.tmp}, got {debs}"
        cls.deb = debs[0]
        cls.root = os.path.join(cls.tmp, "root")
        r = run(["dpkg", "-x", cls.deb, cls.root])
        assert r.returncode == 0, r.stderr

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def extracted(self, path):
        return os.path.join(self.root, path)

    def test_control_has_depends_from_shlibdeps_and_the_project_version(self):
        r = run(["dpkg-deb", "-I", self.deb])
        self.assertEqual(r.returncode, 0, r.stderr)
        depends = re.search(r"^ Depends: (.*)$", r.stdout, re.M)
        self.assertIsNotNone(depends, f"no Depends line:\n{r.stdout}")
        self.assertIn("libssh2", depends.group(1))
        self.assertIn("libcpp-httplib", depends.group(1))  # dlaunch ui
        self.assertIn("libprometheus-cpp-core", depends.group(1))
        self.assertIn("libc6", depends.group(1))
        version = run([harness.DLAUNCH, "--version"]).stdout.split()[-1]
        self.assertRegex(r.stdout, rf"(?m)^ Version: {re.escape(version)}$")
        self.assertRegex(r.stdout, r"(?m)^ Package: dlaunch$")

    def test_contents(self):
        r = run(["dpkg-deb", "-c", self.deb])
        self.assertEqual(r.returncode, 0, r.stderr)
        paths = {line.split()[-1].lstrip(".") for line in r.stdout.splitlines()}
        for path in ["usr/bin/dlaunch", "usr/bin/dlaunch-agent", MAN_PAGE, BASH_COMPLETION,
                     ZSH_COMPLETION, "usr/lib/systemd/system/dlaunch-node@.service",
                     "usr/lib/systemd/system/dlaunch-metrics.service",
                     "usr/lib/systemd/system/dlaunch-metrics.timer",
                     "usr/share/doc/dlaunch/grafana-dashboard.json",
                     "usr/share/doc/dlaunch/cron.example",
                     "usr/share/doc/dlaunch/sbatch.example",
                     "usr/share/doc/dlaunch/logrotate.example",
                     "usr/share/doc/dlaunch/cloud-init.example.yaml",
                     "usr/share/doc/dlaunch/hosts.example.toml"]:
            self.assertIn("/" + path, paths)
        if os.access(os.path.join(harness.BIN_DIR, "mnist_dist"), os.X_OK):
            self.assertIn("/usr/bin/mnist_dist", paths)
        else:
            harness.skip_part(self, "not built: mnist_dist, so not in the package (needs "
                              "LibTorch: libtorch-dev libgloo-dev)")
        # The agent for the other architecture, where dlaunch looks for it.
        if os.path.exists(os.path.join(harness.BIN_DIR, "dlaunch-agent-aarch64")):
            self.assertIn("/usr/lib/dlaunch/dlaunch-agent-aarch64", paths)
            header = run(["readelf", "-h", self.extracted("usr/lib/dlaunch/dlaunch-agent-aarch64")])
            self.assertIn("AArch64", header.stdout)
        else:
            harness.skip_part(self, "not built: dlaunch-agent-aarch64, so not in the package "
                              '(configure with -DDLAUNCH_AGENT_ARCHES="x86_64;aarch64")')
        for line in r.stdout.splitlines():
            self.assertIn("root/root", line)

    def test_extracted_binaries_run_with_the_system_libraries(self):
        for name in ["dlaunch", "dlaunch-agent"]:
            r = run([self.extracted(f"usr/bin/{name}"), "--version"])
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertRegex(r.stdout, rf"^{name} \d+\.\d+\.\d+")

    def test_man_page_renders(self):
        if shutil.which("man") is None:
            self.skipTest("missing: man (man-db)")
        env = dict(os.environ, MANWIDTH="80", LC_ALL="C", GROFF_NO_SGR="1")
        env.pop("MAN_KEEP_FORMATTING", None)
        r = run(["man", "-l", self.extracted(MAN_PAGE)], env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        text = re.sub(r".\x08", "", r.stdout)  # overstrike bold, should a pager-less man add it
        for needle in ["DLAUNCH(1)", "--hosts FILE", "--nproc-per-node", "--max-restarts",
                       "--log-dir", "DLAUNCH_STATE_DIR", "NO_COLOR", "MASTER_ADDR", "result.toml",
                       "dlaunch logs JOB -f", "--detach"]:
            self.assertIn(needle, text)
        self.assertNotIn("@PROJECT_VERSION@", text)
        self.assertTrue(all(len(line) <= 80 for line in text.splitlines()))

    def test_man_page_names_every_long_flag_of_the_help(self):
        with gzip.open(self.extracted(MAN_PAGE), "rt") as f:
            page = roff_text(f.read())
        documented = set(LONG_FLAG.findall(page))
        for command, text in help_texts().items():
            missing = sorted(help_flags(text) - documented)
            self.assertEqual(missing, [], f"flags of `{command} --help` not in the man page")

    def test_completions_name_every_long_flag_of_the_help(self):
        for path in [BASH_COMPLETION, ZSH_COMPLETION]:
            with open(self.extracted(path)) as f:
                flags = set(LONG_FLAG.findall(f.read()))
            for command, text in help_texts().items():
                missing = sorted(help_flags(text) - flags)
                self.assertEqual(missing, [], f"flags of `{command} --help` not in {path}")

    def test_completions_parse(self):
        r = run(["bash", "-n", self.extracted(BASH_COMPLETION)])
        self.assertEqual(r.returncode, 0, r.stderr)
        if shutil.which("zsh") is None:
            self.skipTest("missing: zsh (zsh; the bash completion was checked)")
        r = run(["zsh", "-n", self.extracted(ZSH_COMPLETION)])
        self.assertEqual(r.returncode, 0, r.stderr)

    def complete_bash(self, words, env):
        """What the bash completion offers for `words`, the last being completed."""
        script = (f"source {self.extracted(BASH_COMPLETION)}\n"
                  f"COMP_WORDS=({' '.join(words)}); COMP_CWORD={len(words) - 1}\n"
                  "_dlaunch; printf '%s\\n' \"${COMPREPLY[@]}\"\n")
        r = run(["bash", "--norc", "-c", script], env=env, cwd=self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        return sorted(line for line in r.stdout.splitlines() if line)

    def test_bash_completes_commands_jobs_and_hosts_files(self):
        state = os.path.join(self.tmp, "state")
        for job in ["nightly", "mnist_dist-1"]:
            os.makedirs(os.path.join(state, job), exist_ok=True)
        for name in ["hosts.toml", "hosts.txt"]:
            open(os.path.join(self.tmp, name), "w").close()
        env = dict(os.environ, DLAUNCH_STATE_DIR=state)
        self.assertEqual(self.complete_bash(["dlaunch", "lo"], env), ["logs"])
        self.assertEqual(self.complete_bash(["dlaunch", "logs", "''"], env),
                         ["mnist_dist-1", "nightly"])
        self.assertEqual(self.complete_bash(["dlaunch", "get", "ni"], env), ["nightly"])
        other = os.path.join(self.tmp, "other")
        os.makedirs(os.path.join(other, "elsewhere"))
        self.assertEqual(self.complete_bash(["dlaunch", "stop", "--log-dir", other, "''"], env),
                         ["elsewhere"])
        self.assertEqual(self.complete_bash(["dlaunch", "--hosts", "hos"], env), ["hosts.toml"])
        self.assertIn("--nproc-per-node", self.complete_bash(["dlaunch", "--nproc"], env))
        self.assertEqual(self.complete_bash(["dlaunch", "list", "--st"], env), ["--status"])
        self.assertEqual(self.complete_bash(["dlaunch", "top", "''"], env), ["job", "node"])
        self.assertEqual(self.complete_bash(["dlaunch", "top", "node", "--det"], env),
                         ["--details"])
        self.assertEqual(self.complete_bash(["dlaunch", "top", "job", "ni"], env), ["nightly"])
        self.assertEqual(self.complete_bash(["dlaunch", "top", "--j"], env), ["--json"])


if __name__ == "__main__":
    harness.require_binaries()
    missing = [tool for tool in ["cpack", "dpkg-deb", "dpkg"] if shutil.which(tool) is None]
    if missing:
        harness.skip_file(f"missing: {', '.join(missing)} (cmake, dpkg-dev)")
    if not os.path.exists(CPACK_CONFIG):
        harness.skip_file(f"not built: {CPACK_CONFIG} (configure the build dir with CMake first)")
    harness.main(verbosity=2)
