#include "launcher/cli/subcommand.h"

#include <vector>

#include "common/console.h"
#include "common/exit_codes.h"
#include "launcher/config/options.h"

namespace dlaunch {

Result<void, int> parse_subcommand(CLI::App& app, int argc, const char* const* argv) {
  try {
    // CLI11 takes the arguments last first.
    std::vector<std::string> args;
    for (int i = argc - 1; i >= 1; --i) args.emplace_back(argv[i]);
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) {
      console().out(app.help());
      return fail(kExitOk);
    }
    console().error(e.what());
    return fail(kExitUsage);
  }
  return {};
}

void add_log_dir_option(CLI::App& app, std::string& log_dir) {
  log_dir = default_log_dir();
  app.add_option("--log-dir", log_dir, "state dir holding the job records")->capture_default_str();
}

std::optional<Job> find_job_or_report(const std::string& log_dir, const std::string& name) {
  auto job = find_job(log_dir, name);
  if (!job) console().error("no job named '" + name + "' in " + log_dir + " (see dlaunch list)");
  return job;
}

bool coordinator_reachable_or_report(const Job& job, const std::string& what) {
  if (!job.elsewhere) return true;
  const auto& i = job.info;
  console().error("job " + i.name + "'s coordinator (pid " + std::to_string(i.coordinator_pid) +
                  ") runs on " + i.coordinator_host + ", which shares this state dir: " + what +
                  " it there (ssh " + i.coordinator_host + " dlaunch " + what + " " + i.name + ")");
  return false;
}

}  // namespace dlaunch
