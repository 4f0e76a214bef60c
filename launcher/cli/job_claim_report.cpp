#include "launcher/cli/job_claim_report.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "common/console.h"
#include "common/exit_codes.h"
#include "common/log.h"
#include "common/posix.h"
#include "launcher/plan/launch_spec_builder.h"

namespace dlaunch {
namespace {

// The command as the hosts run it: a Python program's interpreter is each
// host's own (--python, the hosts file's `python`, ...): one, or each of them.
std::vector<std::string> recorded_command(const Plan& plan, const Options& o) {
  std::vector<std::string> command = plan.command;
  if (!o.python_program || command.empty() || plan.nodes.empty()) return command;
  std::vector<std::string> pythons;
  for (const auto& node : plan.nodes) {
    const std::string path = python_for(o, node.host).path;
    if (std::find(pythons.begin(), pythons.end(), path) == pythons.end()) pythons.push_back(path);
  }
  std::string joined = pythons.front();
  for (std::size_t i = 1; i < pythons.size(); ++i) joined += "|" + pythons[i];
  command.front() = pythons.size() == 1 ? joined : "{" + joined + "}";
  return command;
}

}  // namespace

JobInfo new_job_info(const Plan& plan, const Options& o) {
  JobInfo info;
  info.mode = o.mode == Mode::standalone           ? "standalone"
              : o.host_source == HostSource::slurm ? "slurm"
              : o.mode == Mode::hosts              ? "hosts"
                                                   : "manual";
  info.nnodes = plan.nnodes;
  info.command = recorded_command(plan, o);
  info.coordinator_pid = ::getpid();
  info.coordinator_start_ticks = process_start_ticks(::getpid());
  info.coordinator_host = this_host_name();
  info.coordinator_boot = this_boot_id();
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  info.started_ms = std::chrono::duration_cast<std::chrono::milliseconds>(now).count();
  info.started = info.started_ms / 1000;
  info.status = JobStatus::pending;
  // Where the ranks run: --workdir as given (on each host), else this
  // directory, which the agents take when the host has it.
  info.workdir = o.workdir.empty() ? current_directory() : o.workdir;
  info.tensorboard_dir = o.tensorboard_dir;
  info.git_url = o.git_url;
  info.git_commit = o.git_commit;
  info.checkpoint_dir = o.checkpoint_dir;
  info.detached = o.detach;
  for (const auto& n : plan.nodes) info.hosts.push_back(n.host.name);
  return info;
}

Result<Claim, int> claim_or_report(const Options& o, const std::string& name, NameRule rule,
                                   JobInfo info) {
  auto claimed = claim_job(o.log_dir, name, rule, info);
  if (!claimed) {
    if (const auto& taken = claimed.error().taken) {
      const std::string on = taken->elsewhere_host.empty() ? "" : " on " + taken->elsewhere_host;
      console().error("job '" + taken->name + "' is " +
                      std::string(job_status_name(taken->status)) + " (coordinator pid " +
                      std::to_string(taken->coordinator_pid) + on +
                      "): a job's name is taken until it ends; stop it with `dlaunch stop " +
                      taken->name + "`" + on + " or choose another --name");
      return fail(kExitUsage);
    }
    console().error(claimed.error().error + " (set --log-dir or DLAUNCH_STATE_DIR)");
    return fail(kExitFailure);
  }
  if (!claimed->archived_as.empty())
    log::info("the previous job ", name, " is now ", claimed->archived_as);
  if (!claimed->write_error.empty()) {
    // A detached job is reached only through its record: without it `list`
    // would not show it, `stop` could not find it, and its name would be
    // free for a duplicate. Nothing is started.
    if (o.detach) {
      console().error(claimed->write_error + ": a detached job without its record could not be " +
                      "listed or stopped, so none was started (free space in " + o.log_dir +
                      ", or set --log-dir or DLAUNCH_STATE_DIR)");
      std::error_code ec;
      std::filesystem::remove_all(claimed->dir, ec);
      return fail(kExitFailure);
    }
    // In the foreground the job goes on without its record; `list` and `get`
    // will not know it.
    log::warn(claimed->write_error);
  }
  info.name = claimed->name;
  return Claim{claimed->name, claimed->dir, info};
}

}  // namespace dlaunch
