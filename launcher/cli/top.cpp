// `dlaunch top node` and `dlaunch top job` (plain `dlaunch top` is `top job`),
// as Arena's `arena top node` and `arena top job`.
//
// top node: a check-mode agent on every host (as `dlaunch check` starts them,
// facts only: no MASTER_ADDR probe, no matrix) reports its GPUs through NVML,
// each with its utilization, memory in use and the dlaunch job holding it.
//
// top job: the running jobs of the state dir, and the CPU and memory of their
// ranks on this machine (found by DLAUNCH_JOB in their environment) over one
// sampling interval. Ranks on other hosts are not visible from here; the
// output says which hosts those are.
#include <chrono>
#include <set>

#include "common/console.h"
#include "common/exit_codes.h"
#include "common/posix.h"
#include "common/rank_usage.h"
#include "launcher/check/check_launch.h"
#include "launcher/cli/commands.h"
#include "launcher/cli/load_hosts.h"
#include "launcher/cli/log_backend.h"
#include "launcher/cli/subcommand.h"
#include "launcher/cli/top_gather.h"
#include "launcher/cli/top_view.h"

namespace dlaunch {
namespace {

struct JobArgs {
  std::string log_dir;
  double interval_s = 1.0;
  bool json = false;
  std::string name;
};

void add_job_options(CLI::App& app, JobArgs& a) {
  add_log_dir_option(app, a.log_dir);
  app.add_option("--interval", a.interval_s, "sampling interval in seconds")
      ->check(CLI::Range(0.0, 3600.0))
      ->capture_default_str();
  app.add_flag("--json", a.json, "one JSON document on stdout instead of the tables");
  app.add_option("job", a.name, "only this job");
}

struct NodeArgs {
  Options o;
  bool json = false;
  bool details = false;
  int timeout_s = 60;
};

void add_node_options(CLI::App& app, NodeArgs& a) {
  a.o.mode = Mode::hosts;
  add_host_list_options(app, a.o);
  app.add_flag("-d,--details", a.details, "every GPU of every host: utilization, memory, job");
  app.add_flag("--json", a.json, "one JSON document on stdout instead of the tables");
  app.add_flag("-v,--verbose", a.o.verbose, "more detail on stderr (-vv: debug)");
  app.add_option("--timeout", a.timeout_s, "seconds for every agent to start and answer")
      ->check(CLI::Range(1, 3600))
      ->capture_default_str();
  add_ssh_options(app, a.o);
}

int top_node(NodeArgs& a) {
  raise_descriptor_limit();
  if (auto resolved = resolve_host_source(a.o, true); !resolved) {
    console().error(resolved.error());
    return kExitUsage;
  }
  if (a.o.host_source == HostSource::none) {
    console().error("no hosts to look at: give --hosts, --hostfile or -H (or run in a Slurm job)");
    return kExitUsage;
  }
  setup_logging(a.o.verbose);
  a.o.rdzv_timeout_s = a.timeout_s;
  CheckPolicy::Config policy;
  policy.facts_only = true;
  policy.join_timeout = std::chrono::seconds(a.timeout_s);
  auto hosts = load_hosts_or_report(a.o);
  if (!hosts) return hosts.error();
  auto ran = launch_check(a.o, *hosts, policy);
  if (!ran) return ran.error();
  const CheckResult& result = *ran;
  console().out(a.json ? format_top_node_json(result) : format_top_node_text(result, a.details));
  console().flush();
  if (result.interrupted) return kExitInterrupted;
  for (const auto& h : result.hosts) {
    if (!h.up) return kExitFailure;
  }
  return kExitOk;
}

int top_job(const JobArgs& a) {
  TopJobs top;
  if (!a.name.empty()) {
    auto job = find_job_or_report(a.log_dir, a.name);
    if (!job) return job.error();
    top.interval_s = a.interval_s;
    top.host_name = this_host_name();
    top.jobs.push_back(std::move(*job));
    top.ranks = sample_ranks_here(a.interval_s);
    top.log_dir = a.log_dir;
    std::erase_if(top.ranks, [&](const auto& r) { return r.job != a.name; });
  } else {
    top = gather_top_jobs(a.log_dir, a.interval_s);
  }
  console().out(a.json ? format_top_job_json(top) : format_top_job_text(top));
  return kExitOk;
}

}  // namespace

TopJobs gather_top_jobs(const std::string& log_dir, double interval_s) {
  TopJobs top;
  top.interval_s = interval_s;
  top.host_name = this_host_name();
  auto jobs = load_jobs(log_dir);
  std::set<std::string> active;
  for (const auto& job : jobs)
    if (is_active(job.status) && job.info.node_of_job.empty()) active.insert(job.info.name);
  for (auto& job : jobs) {
    // A manual-mode node's own record stands for its job only where the job's
    // own record is not listed too (a home shared with node 0).
    if (!is_active(job.status) || active.contains(job.info.node_of_job)) continue;
    top.jobs.push_back(std::move(job));
  }
  top.ranks = sample_ranks_here(interval_s);
  top.log_dir = log_dir;
  keep_ranks_of_listed_jobs(top);
  return top;
}

int top_command(int argc, const char* const* argv) {
  CLI::App app{
      "dlaunch top: the running jobs and their ranks here (top job), or the GPUs of "
      "every host (top node)",
      "dlaunch top"};
  JobArgs plain;
  add_job_options(app, plain);
  CLI::App* node = app.add_subcommand(
      "node", "every host's GPUs: total, held by dlaunch jobs, utilization and memory");
  NodeArgs node_args;
  add_node_options(*node, node_args);
  node->footer(
      "Starts an agent on every host as `dlaunch check` does (--hosts, --hostfile, -H or a\n"
      "Slurm job's nodes; --include/--exclude pick among them), which reads its GPUs through\n"
      "NVML (a host without the NVIDIA driver has 0) and tells which dlaunch job's rank holds\n"
      "each (by the ranks' CUDA_VISIBLE_DEVICES and LOCAL_RANK; only processes of the SSH\n"
      "user are seen). Starts no training process; the agents exit at the end.\n"
      "Exit status: 0 when every host answered, 1 when not, 2 on a usage error.\n\n"
      "Examples:\n"
      "  dlaunch top node --hosts hosts.toml\n"
      "  dlaunch top node --hostfile hostfile -d\n"
      "  dlaunch top node -H gpu1,gpu2 --json | jq .gpus_allocated");
  CLI::App* job = app.add_subcommand(
      "job", "running jobs: hosts, ranks, GPUs, CPU and memory of their ranks on this machine");
  JobArgs job_args;
  add_job_options(*job, job_args);
  const char* job_footer =
      "The jobs of the state dir that are PENDING, RUNNING or RESTARTING (or the one named),\n"
      "with the CPU and memory of their ranks on this machine over --interval, then one row\n"
      "per rank process here. Ranks on other hosts cannot be sampled from here: the output\n"
      "names those hosts.\n\n"
      "Examples:\n"
      "  dlaunch top job\n"
      "  dlaunch top job train --interval 5\n"
      "  dlaunch top job --json | jq '.jobs[].gpus'";
  job->footer(job_footer);
  app.footer(std::string("Plain `dlaunch top` is `dlaunch top job`.\n") + job_footer);
  app.require_subcommand(0, 1);
  if (auto parsed = parse_subcommand(app, argc, argv); !parsed) return parsed.error();
  if (node->parsed()) return top_node(node_args);
  return top_job(job->parsed() ? job_args : plain);
}

}  // namespace dlaunch
