// `dlaunch get JOB`: one job in full: status, a row per host (ranks, agent
// pid, state), times, the root cause of a failure with its last lines, and
// where its logs and TensorBoard events are.
#include <ctime>
#include <filesystem>

#include "common/console.h"
#include "common/exit_codes.h"
#include "launcher/cli/command_args.h"
#include "launcher/cli/commands.h"
#include "launcher/cli/job_text.h"
#include "launcher/cli/job_view.h"
#include "launcher/cli/subcommand.h"

namespace dlaunch {
namespace {

std::string rank_range(const NodeRecord& n) {
  if (n.first_rank < 0 || n.ranks <= 0) return "-";
  if (n.ranks == 1) return std::to_string(n.first_rank);
  return std::to_string(n.first_rank) + "-" + std::to_string(n.first_rank + n.ranks - 1);
}

void print_nodes(const Job& job) {
  const JobInfo& i = job.info;
  Console& c = console();
  if (i.nodes.empty()) {
    std::string hosts;
    for (const auto& h : i.hosts) hosts += (hosts.empty() ? "" : ", ") + h;
    if (!hosts.empty()) c.out("hosts:      " + hosts + "\n");
    return;
  }
  std::size_t width = 4;
  for (const auto& n : i.nodes) width = std::max(width, n.host.size());
  const int w = static_cast<int>(width);
  c.out(
      formatted("  %-*s  %4s  %-9s  %9s  %s\n", w, "HOST", "NODE", "RANKS", "AGENT_PID", "STATE"));
  for (const auto& n : i.nodes) {
    // An elastic job's spare or retired host holds no node rank.
    const std::string node = n.node_rank >= 0 ? std::to_string(n.node_rank) : "-";
    c.out(formatted("  %-*s  %4s  %-9s  %9s  %s\n", w, n.host.c_str(), node.c_str(),
                    rank_range(n).c_str(),
                    n.agent_pid > 0 ? std::to_string(n.agent_pid).c_str() : "-",
                    shown_node_state(job, n).c_str()));
  }
}

void print_job(const Job& job) {
  Console& c = console();
  const JobInfo& i = job.info;
  const std::optional<JobResult>& result = job.result;
  const long long now = std::time(nullptr);
  c.out("name:       " + i.name + "\n");
  std::string status(job_status_name(job.status));
  if (result) status += " (exit code " + std::to_string(result->exit_code) + ")";
  if (job.status == JobStatus::lost)
    status += " (its coordinator, pid " + std::to_string(i.coordinator_pid) +
              ", is gone without ending the record)";
  c.out("status:     " + status + "\n");
  if (!i.node_of_job.empty())
    c.out("node:       " + i.node_name + " of manual-mode job " + i.node_of_job +
          " (its node 0 at " + i.node0 + " keeps the job's record and rank logs)\n");
  const int ranks = job_ranks(job);
  const std::string rank_text =
      ranks == 0 && !i.node_of_job.empty()  ? "this node's ranks as node 0 assigns them"
      : ranks == 0 && is_active(job.status) ? "ranks given once every node has joined"
      : ranks == 1                          ? "1 rank"
                                            : std::to_string(ranks) + " ranks";
  c.out(formatted("mode:       %s, %d node%s, %s\n", i.mode.c_str(), i.nnodes,
                  i.nnodes == 1 ? "" : "s", rank_text.c_str()));
  c.out("command:    " + command_text(i.command) + "\n");
  if (!i.workdir.empty()) c.out("workdir:    " + i.workdir + "\n");
  c.out("started:    " + format_time(i.started) + "\n");
  if (result) c.out("finished:   " + format_time(result->finished) + "\n");
  c.out("duration:   " + format_duration(job_duration(job, now)) + "\n");
  if (is_active(job.status))
    c.out(formatted("coordinator pid: %lld", i.coordinator_pid) +
          (job.elsewhere ? " on " + i.coordinator_host + " (as it last wrote; not checked here)"
                         : std::string()) +
          "\n");
  if (job_restarts(job) > 0) c.out(formatted("restarts:   %d\n", job_restarts(job)));
  print_nodes(job);
  if (!i.history.empty()) {
    c.out("history:\n");
    for (const auto& h : i.history)
      c.out(
          formatted("  %s  round %d  %s\n", format_time(h.time).c_str(), h.round, h.what.c_str()));
  }
  if (result && !result->root_cause.empty()) {
    c.out("root cause: " + result->root_cause + "\n");
    for (const auto& line : result->root_cause_tail) c.out("  | " + line + "\n");
  }
  if (const auto stacks = last_stacks(job.dir)) {
    c.out("stacks:     " + stacks->dir + "\n");
    for (const auto& line : stacks->verdict) c.out("  " + line + "\n");
  }
  c.out("logs:       " + job.dir + "\n");
  // Every round's file: a restarted job's later rounds are rank-R.N.log.
  for (const auto& [rank, files] : rank_log_rounds(job.dir)) {
    for (const auto& [round, path] : files) {
      std::error_code ec;
      const auto bytes = static_cast<unsigned long long>(std::filesystem::file_size(path, ec));
      const std::string name = std::filesystem::path(path).filename().string();
      c.out(round == 0 ? formatted("  %s  %llu bytes\n", name.c_str(), bytes)
                       : formatted("  %s  %llu bytes (round %d)\n", name.c_str(), bytes, round));
    }
  }
  std::error_code ec;
  if (std::filesystem::exists(job.dir + "/coordinator.log", ec))
    c.out(i.node_of_job.empty() ? "  coordinator.log (the detached coordinator's messages)\n"
                                : "  coordinator.log (the detached node's messages)\n");
  if (!i.git_commit.empty()) c.out("code:       " + i.git_url + " at " + i.git_commit + "\n");
  if (!i.tensorboard_dir.empty()) {
    c.out("tensorboard: events of " + i.tensorboard_dir + " on rank 0's host; view them with\n");
    c.out("  tensorboard --logdir " + tensorboard_logdir(job) + "\n");
  }
  if (!i.checkpoint_dir.empty()) {
    c.out("checkpoint: " + i.checkpoint_dir + " on node 0; the latest complete copy is in\n");
    c.out("  " + checkpoint_copy(job) + "\n");
  }
}

}  // namespace

Result<GetArgs, int> parse_get_args(int argc, const char* const* argv) {
  CLI::App app{"dlaunch get: one job in full", "dlaunch get"};
  GetArgs a;
  add_log_dir_option(app, a.log_dir);
  app.add_option("job", a.name, "job name (see dlaunch list)")->required();
  app.add_flag("--json", a.json_out, "the job as one JSON object");
  if (auto parsed = parse_subcommand(app, argc, argv); !parsed) return fail(parsed.error());
  return a;
}

int get_job(const GetArgs& a) {
  auto job = find_job_or_report(a.log_dir, a.name);
  if (!job) return job.error();
  if (a.json_out) {
    JsonWriter json;
    write_job_json(json, *job, std::time(nullptr));
    console().out(json.text() + "\n");
    return 0;
  }
  print_job(*job);
  return 0;
}

int get_command(int argc, const char* const* argv) {
  auto args = parse_get_args(argc, argv);
  return args ? get_job(*args) : args.error();
}

}  // namespace dlaunch
