// `dlaunch stacks JOB [-r RANKS]`: every rank's stack of a running job, on
// every host, from any terminal. The request goes through the job directory:
// a request file, then SIGUSR1 to the coordinator (launcher/hang/hang_watch.h),
// which asks the agents and leaves a reply naming <job dir>/stacks/<time>/.
// Prints that directory's summary: the ranks grouped by stack, smallest group
// first, and the verdict.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "common/console.h"
#include "common/exit_codes.h"
#include "common/private_file.h"
#include "launcher/cli/command_args.h"
#include "launcher/cli/commands.h"
#include "launcher/cli/job_text.h"
#include "launcher/cli/subcommand.h"
#include "launcher/config/options.h"
#include "launcher/hang/hang_watch.h"
#include "launcher/job/job_recorder.h"

namespace dlaunch {

Result<StacksArgs, int> parse_stacks_args(int argc, const char* const* argv) {
  CLI::App app{"dlaunch stacks: every rank's stack of a running job, grouped", "dlaunch stacks"};
  StacksArgs a;
  add_log_dir_option(app, a.log_dir);
  app.add_option("job", a.name, "job name (see dlaunch list)")->required();
  app.add_option("-r,--ranks", a.ranks_text, "only these ranks, e.g. 3 or 0-3,8");
  app.add_option("--timeout", a.timeout_s, "seconds to wait for every host")
      ->capture_default_str()
      ->check(CLI::Range(1, 3600));
  if (auto parsed = parse_subcommand(app, argc, argv); !parsed) return fail(parsed.error());
  return a;
}

int gather_stacks(const StacksArgs& a) {
  std::string ranks;
  if (!a.ranks_text.empty()) {
    const auto parsed = parse_rank_list(a.ranks_text);
    if (!parsed) {
      console().error("-r: expected ranks like 3 or 0-3,8, got '" + a.ranks_text + "'");
      return kExitUsage;
    }
    for (int r : *parsed) ranks += (ranks.empty() ? "" : ",") + std::to_string(r);
  }
  auto job = find_job_or_report(a.log_dir, a.name);
  if (!job) return job.error();
  if (!is_active(job->status)) {
    console().note("job " + a.name + " is not running (" +
                   std::string(job_status_name(job->status)) +
                   "); the stacks it left: " + job->dir + "/stacks");
    return kExitFailure;
  }
  if (!coordinator_reachable_or_report(*job, "stacks")) return kExitFailure;
  if (::access(HangWatch::ready_path(job->dir).c_str(), F_OK) != 0) {
    console().error("job " + a.name +
                    "'s coordinator does not answer `dlaunch stacks` (not started "
                    "yet, or by a dlaunch without it)");
    return kExitFailure;
  }
  std::random_device seed;
  const std::string id = std::to_string(::getpid()) + "-" + std::to_string(seed() % 1000000);
  if (auto written = write_private_file(job->dir, HangWatch::request_prefix() + id, ranks + "\n");
      !written) {
    console().error(written.error());
    return kExitFailure;
  }
  ::kill(static_cast<pid_t>(job->info.coordinator_pid), SIGUSR1);
  const std::string reply = HangWatch::reply_path(job->dir, id);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(a.timeout_s);
  while (std::chrono::steady_clock::now() < deadline) {
    std::ifstream in(reply);
    std::string dir;
    if (std::getline(in, dir) && !dir.empty()) {
      ::unlink(reply.c_str());
      std::ifstream summary(dir + "/summary.txt");
      std::stringstream text;
      text << summary.rdbuf();
      console().out(text.str());
      console().out("each rank's whole dump: " + dir + "/rank-<R>.txt\n");
      return kExitOk;
    }
    if (!coordinator_alive(job->info)) {
      console().error("job " + a.name + " ended before its stacks came back");
      return kExitFailure;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ::unlink((job->dir + "/" + HangWatch::request_prefix() + id).c_str());
  console().error("job " + a.name + ": no stacks within " + std::to_string(a.timeout_s) + " s");
  return kExitFailure;
}

int stacks_command(int argc, const char* const* argv) {
  auto args = parse_stacks_args(argc, argv);
  return args ? gather_stacks(*args) : args.error();
}

}  // namespace dlaunch
