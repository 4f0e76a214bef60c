// `dlaunch list`: every job in the state dir, newest last, one row each.
#include <algorithm>
#include <ctime>

#include "common/console.h"
#include "launcher/cli/commands.h"
#include "launcher/cli/job_text.h"
#include "launcher/cli/subcommand.h"

namespace dlaunch {

int list_command(int argc, const char* const* argv) {
  CLI::App app{"dlaunch list", "dlaunch list"};
  std::string log_dir;
  add_log_dir_option(app, log_dir);
  if (auto done = parse_subcommand(app, argc, argv)) return *done;

  const auto jobs = load_jobs(log_dir);
  if (jobs.empty()) {
    console().out("no jobs in " + log_dir + "\n");
    return 0;
  }
  std::size_t width = 4;
  for (const auto& j : jobs) width = std::max(width, j.info.name.size());
  console().out(formatted("%-*s  %-11s  %4s  %5s  %5s  %-19s  %8s  %s\n", static_cast<int>(width),
                          "NAME", "STATUS", "EXIT", "NODES", "RANKS", "STARTED", "DURATION",
                          "COMMAND"));
  const long long now = std::time(nullptr);
  for (const auto& j : jobs) {
    const std::string exit = j.result ? std::to_string(j.result->exit_code) : "-";
    const std::string ranks =
        j.result && j.result->world_size > 0 ? std::to_string(j.result->world_size) : "-";
    console().out(formatted(
        "%-*s  %-11s  %4s  %5d  %5s  %-19s  %8s  %s\n", static_cast<int>(width),
        j.info.name.c_str(), std::string(job_state_name(j.state)).c_str(), exit.c_str(),
        j.info.nnodes, ranks.c_str(), format_time(j.info.started).c_str(),
        format_duration(job_duration(j, now)).c_str(), command_text(j.info.command).c_str()));
  }
  return 0;
}

}  // namespace dlaunch
