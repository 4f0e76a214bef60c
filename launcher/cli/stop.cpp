// `dlaunch stop JOB [--grace S]`: SIGTERM to the job's coordinator, which stops
// every rank on every node as on Ctrl-C and ends the record STOPPED; then waits
// for it to be gone.
#include <signal.h>

#include <chrono>
#include <thread>

#include "common/console.h"
#include "common/exit_codes.h"
#include "launcher/cli/commands.h"
#include "launcher/cli/job_text.h"
#include "launcher/cli/subcommand.h"
#include "launcher/job/job_recorder.h"

namespace dlaunch {

int stop_command(int argc, const char* const* argv) {
  CLI::App app{"dlaunch stop: stop every rank of a job on every host", "dlaunch stop"};
  std::string log_dir;
  std::string name;
  std::optional<int> grace_s;
  int wait_s = 60;
  add_log_dir_option(app, log_dir);
  app.add_option("job", name, "job name (see dlaunch list)")->required();
  app.add_option("--grace", grace_s,
                 "seconds the ranks get between SIGTERM and SIGKILL (default: the job's --grace)")
      ->check(CLI::Range(0, 3600));
  app.add_option("--wait", wait_s, "seconds to wait for the stop")->capture_default_str();
  if (auto parsed = parse_subcommand(app, argc, argv); !parsed) return parsed.error();

  auto job = find_job_or_report(log_dir, name);
  if (!job) return job.error();
  if (!is_active(job->status)) {
    console().note("job " + name + " is not running (" + std::string(job_status_name(job->status)) +
                   ")");
    return kExitFailure;
  }
  if (!coordinator_reachable_or_report(*job, "stop")) return kExitFailure;
  if (grace_s) {
    if (auto written = write_stop_request(job->dir, *grace_s); !written) {
      console().error(written.error());
      return kExitFailure;
    }
  }
  const long long pid = job->info.coordinator_pid;
  ::kill(static_cast<pid_t>(pid), SIGTERM);
  console().out(formatted("stopping job %s (SIGTERM to coordinator %lld)\n", name.c_str(), pid));
  // The coordinator gives the ranks their grace, then 5 s more to the agents.
  const int limit_s = grace_s ? std::max(wait_s, *grace_s + 10) : wait_s;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(limit_s);
  while (std::chrono::steady_clock::now() < deadline) {
    if (!coordinator_alive(job->info)) {
      const auto after = load_job(job->dir);
      const std::string status =
          after ? std::string(job_status_name(after->status)) : std::string("gone");
      console().out("job " + name + " " + (status == "STOPPED" ? "stopped" : "ended: " + status) +
                    "\n");
      return 0;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  console().note(formatted("job %s still running after %d s", name.c_str(), limit_s));
  return kExitFailure;
}

}  // namespace dlaunch
