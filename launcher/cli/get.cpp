// `dlaunch get JOB`: one job in full: nodes, ranks, times, the root cause of a
// failure with its last lines, and its rank logs.
#include <ctime>
#include <filesystem>

#include "common/console.h"
#include "launcher/cli/commands.h"
#include "launcher/cli/job_text.h"
#include "launcher/cli/subcommand.h"

namespace dlaunch {
namespace {

void print_job(const Job& job) {
  Console& c = console();
  const JobInfo& i = job.info;
  const std::optional<JobResult>& result = job.result;
  c.out("name:      " + i.name + "\n");
  std::string status(job_state_name(job.state));
  if (result) status += " (exit code " + std::to_string(result->exit_code) + ")";
  c.out("status:    " + status + "\n");
  c.out(
      formatted("mode:      %s, %d node%s\n", i.mode.c_str(), i.nnodes, i.nnodes == 1 ? "" : "s"));
  std::string hosts;
  for (const auto& h : i.hosts) hosts += (hosts.empty() ? "" : ", ") + h;
  if (!hosts.empty()) c.out("hosts:     " + hosts + "\n");
  if (result && result->world_size > 0) c.out(formatted("ranks:     %d\n", result->world_size));
  c.out("command:   " + command_text(i.command) + "\n");
  c.out("started:   " + format_time(i.started) + "\n");
  if (result) c.out("finished:  " + format_time(result->finished) + "\n");
  c.out("duration:  " + format_duration(job_duration(job, std::time(nullptr))) + "\n");
  if (job.state == JobState::running) {
    c.out(formatted("coordinator pid: %lld\n", i.coordinator_pid));
  }
  if (result && result->restarts > 0) c.out(formatted("restarts:  %d\n", result->restarts));
  if (result && !result->root_cause.empty()) {
    c.out("root cause: " + result->root_cause + "\n");
    for (const auto& line : result->root_cause_tail) c.out("  | " + line + "\n");
  }
  c.out("logs:      " + job.dir + "\n");
  for (const auto& [rank, path] : rank_logs(job.dir)) {
    std::error_code ec;
    c.out(formatted("  rank-%d.log  %llu bytes\n", rank,
                    static_cast<unsigned long long>(std::filesystem::file_size(path, ec))));
  }
}

}  // namespace

int get_command(int argc, const char* const* argv) {
  CLI::App app{"dlaunch get", "dlaunch get"};
  std::string log_dir;
  std::string name;
  add_log_dir_option(app, log_dir);
  app.add_option("job", name, "job name (see dlaunch list)")->required();
  if (auto done = parse_subcommand(app, argc, argv)) return *done;

  auto job = find_job_or_report(log_dir, name);
  if (!job) return 1;
  print_job(*job);
  return 0;
}

}  // namespace dlaunch
