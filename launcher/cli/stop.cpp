// `dlaunch stop JOB [--grace S]`: SIGTERM to the job's coordinator, which stops
// every rank on every node as on Ctrl-C and ends the record STOPPED; then waits
// for it to be gone.
#include <signal.h>

#include <chrono>
#include <thread>

#include "common/console.h"
#include "common/exit_codes.h"
#include "launcher/cli/command_args.h"
#include "launcher/cli/commands.h"
#include "launcher/cli/job_text.h"
#include "launcher/cli/subcommand.h"
#include "launcher/job/job_recorder.h"

namespace dlaunch {

Result<StopArgs, int> parse_stop_args(int argc, const char* const* argv) {
  CLI::App app{"dlaunch stop: stop every rank of a job on every host", "dlaunch stop"};
  StopArgs a;
  add_log_dir_option(app, a.log_dir);
  app.add_option("job", a.name, "job name (see dlaunch list)")->required();
  app.add_option("--grace", a.grace_s,
                 "seconds the ranks get between SIGTERM and SIGKILL (default: the job's --grace)")
      ->check(CLI::Range(0, 3600));
  app.add_option("--wait", a.wait_s, "seconds to wait for the stop")->capture_default_str();
  if (auto parsed = parse_subcommand(app, argc, argv); !parsed) return fail(parsed.error());
  return a;
}

int stop_job(const StopArgs& a) {
  auto job = find_job_or_report(a.log_dir, a.name);
  if (!job) return job.error();
  if (!is_active(job->status)) {
    console().note("job " + a.name + " is not running (" +
                   std::string(job_status_name(job->status)) + ")");
    return kExitFailure;
  }
  if (!coordinator_reachable_or_report(*job, "stop")) return kExitFailure;
  if (a.grace_s) {
    if (auto written = write_stop_request(job->dir, *a.grace_s); !written) {
      console().error(written.error());
      return kExitFailure;
    }
  }
  const long long pid = job->info.coordinator_pid;
  ::kill(static_cast<pid_t>(pid), SIGTERM);
  console().out(formatted("stopping job %s (SIGTERM to coordinator %lld)\n", a.name.c_str(), pid));
  // The coordinator gives the ranks their grace, then 5 s more to the agents.
  const int limit_s = a.grace_s ? std::max(a.wait_s, *a.grace_s + 10) : a.wait_s;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(limit_s);
  while (std::chrono::steady_clock::now() < deadline) {
    if (!coordinator_alive(job->info)) {
      const auto after = load_job(job->dir);
      const std::string status =
          after ? std::string(job_status_name(after->status)) : std::string("gone");
      console().out("job " + a.name + " " + (status == "STOPPED" ? "stopped" : "ended: " + status) +
                    "\n");
      return 0;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  console().note(formatted("job %s still running after %d s", a.name.c_str(), limit_s));
  return kExitFailure;
}

int stop_command(int argc, const char* const* argv) {
  auto args = parse_stop_args(argc, argv);
  return args ? stop_job(*args) : args.error();
}

}  // namespace dlaunch
