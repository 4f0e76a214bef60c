// `dlaunch stop JOB`: SIGTERM to the job's coordinator, which stops every
// node as on Ctrl-C, then waits for it to be gone.
#include <signal.h>

#include <chrono>
#include <thread>

#include "common/console.h"
#include "launcher/cli/commands.h"
#include "launcher/cli/job_text.h"
#include "launcher/cli/subcommand.h"

namespace dlaunch {

int stop_command(int argc, const char* const* argv) {
  CLI::App app{"dlaunch stop", "dlaunch stop"};
  std::string log_dir;
  std::string name;
  int wait_s = 60;
  add_log_dir_option(app, log_dir);
  app.add_option("job", name, "job name (see dlaunch list)")->required();
  app.add_option("--wait", wait_s, "seconds to wait for the stop");
  if (auto done = parse_subcommand(app, argc, argv)) return *done;

  auto job = find_job_or_report(log_dir, name);
  if (!job) return 1;
  if (job->state != JobState::running) {
    console().note("job " + name + " is not running (" + std::string(job_state_name(job->state)) +
                   ")");
    return 1;
  }
  const long long pid = job->info.coordinator_pid;
  ::kill(static_cast<pid_t>(pid), SIGTERM);
  console().out(formatted("stopping job %s (SIGTERM to coordinator %lld)\n", name.c_str(), pid));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(wait_s);
  while (std::chrono::steady_clock::now() < deadline) {
    if (!coordinator_alive(job->info)) {
      console().out("job " + name + " stopped\n");
      return 0;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  console().note(formatted("job %s still running after %d s", name.c_str(), wait_s));
  return 1;
}

}  // namespace dlaunch
