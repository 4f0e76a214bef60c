// `dlaunch check --hosts FILE [--json] [-v]`: starts a check-mode agent on
// every host as a job would, and prints one row per host (its facts, or why
// it is down), the MASTER_ADDR choice a job would make, and the matrix of
// TCP reachability, connect time and throughput between every pair of hosts
// on the chosen interfaces. Exits 0 only when a job could launch. Starts no
// training process; the agents exit at the end.
#include <CLI/CLI.hpp>
#include <cstdlib>

#include "common/console.h"
#include "common/exit_codes.h"
#include "common/posix.h"
#include "launcher/check/check_launch.h"
#include "launcher/check/check_report.h"
#include "launcher/check/nccl_report.h"
#include "launcher/check/pair_schedule.h"
#include "launcher/cli/command_args.h"
#include "launcher/cli/commands.h"
#include "launcher/cli/load_hosts.h"
#include "launcher/cli/log_backend.h"
#include "launcher/cli/subcommand.h"
#include "launcher/config/container_options.h"
#include "launcher/config/git_source.h"

namespace dlaunch {

Result<CheckArgs, int> parse_check_args(int argc, const char* const* argv) {
  CLI::App app{"dlaunch check: whether a job could launch on these hosts, and what to fix",
               "dlaunch check"};
  CheckArgs a;
  a.o.mode = Mode::hosts;
  add_host_list_options(app, a.o);
  app.add_flag("--json", a.json, "one JSON document on stdout instead of the tables");
  app.add_flag("-v,--verbose", a.o.verbose, "more detail on stderr (-vv: debug)");
  app.add_option("--timeout", a.timeout_s, "seconds for every agent to start and join")
      ->check(CLI::Range(1, 3600))
      ->capture_default_str();
  app.add_option("--matrix-seconds", a.matrix_s,
                 "about how long the pairwise throughput tests take in all (each pair gets "
                 "0.25 to 1 s)")
      ->check(CLI::Range(0, 600))
      ->capture_default_str();
  app.add_option("--matrix-pairs", a.matrix_pairs,
                 "which pairs of hosts the matrix tests: all, sampled (each host with the hosts "
                 "1, 2, 4, 8, ... places after it in the host list), or auto (all up to " +
                     std::to_string(kAllPairsUpTo) + " hosts, else sampled)")
      ->check(CLI::IsMember({"auto", "all", "sampled"}))
      ->capture_default_str();
  app.add_option("--master-addr", a.o.master_addr, "the MASTER_ADDR to try first, as for a job");
  app.add_option("--python", a.o.python,
                 "the Python to report, as a job's .py program would run with it (default: the "
                 "hosts file's python, else $DLAUNCH_PYTHON, else python3 on each host's PATH)");
  app.add_option("--image", a.o.image,
                 "report whether each host has this image, and its ID there (a mismatch is a "
                 "warning)");
  app.add_option("--container-engine", a.o.container_engine,
                 "the engine to report: auto (the first of podman, docker, apptainer, "
                 "singularity, enroot on each host), podman, docker, apptainer or enroot")
      ->capture_default_str()
      ->check(CLI::IsMember(
          std::vector<std::string>(std::begin(kContainerEngines), std::end(kContainerEngines))));
  app.add_option("--sync-git", a.sync_git,
                 "report the commit each host's <workdir>/code/<name> checkout of this "
                 "repository is at (a mismatch is a warning)");
  app.add_option("--workdir", a.o.workdir, "the working directory --sync-git's checkout is under");
  add_ssh_options(app, a.o);
  app.add_flag("--nccl", a.nccl,
               "also time an NCCL all-reduce across every GPU of the hosts, 8 B to 32 MiB, "
               "printed the way nccl-tests does");
  app.add_option("--nccl-timeout", a.nccl_timeout_s,
                 "seconds for the NCCL test in all, NCCL's set-up included")
      ->check(CLI::Range(1, 3600))
      ->capture_default_str();
  app.footer(
      "Starts an agent on every host as `dlaunch --hosts FILE` would (or --hostfile, -H, a\n"
      "Slurm job's nodes; --include/--exclude pick among them), then prints one row per\n"
      "host (agent, OS, kernel, CPUs, GPUs, free space, /dev/shm, clock skew, python and\n"
      "torch), the MASTER_ADDR a job would get, and TCP connect time and throughput between\n"
      "every pair of hosts on the interfaces a job would use. --nccl adds an all-reduce\n"
      "across every GPU of the hosts (bus bandwidth by message size, as nccl-tests prints\n"
      "it). Starts no training process.\n"
      "Exit status: 0 when a job could launch, 1 when not, 2 on a usage error.\n\n"
      "Examples:\n"
      "  dlaunch check --hosts hosts.toml\n"
      "  dlaunch check --hostfile hostfile --exclude worker-3\n"
      "  dlaunch check --hosts hosts.toml --json | jq .matrix\n"
      "  dlaunch check --hosts gpu-hosts.toml --nccl");
  if (auto parsed = parse_subcommand(app, argc, argv); !parsed) return fail(parsed.error());
  return a;
}

int check_hosts(const CheckArgs& args) {
  raise_descriptor_limit();
  CheckArgs a = args;  // the options gain the host source and the timeout
  auto usage_error = [](const std::string& message) {
    console().error(message);
    return kExitUsage;
  };
  if (!a.sync_git.empty()) {
    auto source = parse_git_source(a.sync_git);
    if (!source) return usage_error(source.error());
    a.o.git_url = source->url;
  }
  if (auto resolved = resolve_host_source(a.o, true); !resolved)
    return usage_error(resolved.error());
  if (a.o.host_source == HostSource::none) {
    return usage_error("no hosts to check: give --hosts, --hostfile or -H (or run in a Slurm job)");
  }
  setup_logging(a.o.verbose);
  a.o.rdzv_timeout_s = a.timeout_s;

  CheckPolicy::Config policy;
  policy.join_timeout = std::chrono::seconds(a.timeout_s);
  policy.matrix_budget = std::chrono::seconds(a.matrix_s);
  policy.matrix_pairs = a.matrix_pairs == "all"       ? MatrixPairs::all
                        : a.matrix_pairs == "sampled" ? MatrixPairs::sampled
                                                      : MatrixPairs::automatic;
  if (a.matrix_s == 0) policy.shortest_round = policy.longest_round = std::chrono::milliseconds(0);
  policy.nccl = a.nccl;
  policy.nccl_sizes = nccl_test_sizes();
  policy.nccl_timeout = std::chrono::seconds(a.nccl_timeout_s);
  if (const char* env = std::getenv("DLAUNCH_PYTHON")) a.o.python_env = env;
  auto hosts = load_hosts_or_report(a.o);
  if (!hosts) return hosts.error();
  auto ran = launch_check(a.o, *hosts, policy);
  if (!ran) return ran.error();
  const CheckResult& result = *ran;
  console().out(a.json ? format_check_json(result) : format_check_text(result));
  console().flush();
  if (result.interrupted) return kExitInterrupted;
  return check_exit_code(result);
}

int check_command(int argc, const char* const* argv) {
  auto args = parse_check_args(argc, argv);
  return args ? check_hosts(*args) : args.error();
}

}  // namespace dlaunch
