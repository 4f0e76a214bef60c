#include "launcher/cli/subcommand.h"

#include <filesystem>
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

namespace {

// The records of this machine's manual-mode nodes of job `name` (not node 0:
// it holds the job's own name), for a user who named the job on one of them.
std::string nodes_of_job_here(const std::string& log_dir, const std::string& name) {
  std::string found;
  for (const auto& job : load_jobs(log_dir)) {
    if (job.info.node_of_job != name || job.elsewhere) continue;
    found += (found.empty() ? "" : ", ") + job.info.name;
  }
  return found;
}

}  // namespace

Result<Job, int> find_job_or_report(const std::string& log_dir, const std::string& name) {
  if (auto job = find_job(log_dir, name)) return std::move(*job);
  std::string text = "no job named '" + name + "' in " + log_dir;
  const std::string nodes = nodes_of_job_here(log_dir, name);
  text += nodes.empty() ? " (see dlaunch list)"
                        : "; this machine has its manual-mode node " + nodes +
                              " (node 0 holds the job's name)";
  console().error(text);
  return fail(kExitFailure);
}

bool coordinator_reachable_or_report(const Job& job, const std::string& what) {
  if (!job.elsewhere) return true;
  const auto& i = job.info;
  const std::string nodes =
      nodes_of_job_here(std::filesystem::path(job.dir).parent_path().string(), i.name);
  console().error("job " + i.name + "'s coordinator (pid " + std::to_string(i.coordinator_pid) +
                  ") runs on " + i.coordinator_host + ", which shares this state dir: " + what +
                  " it there (ssh " + i.coordinator_host + " dlaunch " + what + " " + i.name + ")" +
                  (nodes.empty() ? "" : "; this machine's node of it is " + nodes));
  return false;
}

}  // namespace dlaunch
