// `dlaunch top`: CPU and memory of the ranks of every dlaunch job on this
// machine, found by the DLAUNCH_JOB variable in their environment, over one
// sampling interval.
#include <dirent.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <thread>

#include "common/console.h"
#include "common/posix.h"
#include "launcher/cli/commands.h"
#include "launcher/cli/job_text.h"
#include "launcher/cli/subcommand.h"

namespace dlaunch {
namespace {

struct ProcSample {
  std::string job;
  std::string rank;
  std::string command;
  unsigned long long cpu_ticks = 0;
  long rss_kib = 0;
};

std::map<int, ProcSample> sample_ranks() {
  std::map<int, ProcSample> out;
  DIR* d = ::opendir("/proc");
  if (!d) return out;
  while (dirent* e = ::readdir(d)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (*end != '\0' || pid <= 0) continue;
    const std::string base = std::string("/proc/") + e->d_name;
    std::ifstream env(base + "/environ", std::ios::binary);
    std::string var;
    ProcSample s;
    while (std::getline(env, var, '\0')) {
      if (var.starts_with("DLAUNCH_JOB=")) s.job = var.substr(12);
      if (var.starts_with("RANK=")) s.rank = var.substr(5);
    }
    if (s.job.empty()) continue;
    const auto fields = proc_stat(static_cast<pid_t>(pid));
    if (fields.size() < 24) continue;
    s.command = fields[1];
    const unsigned long long utime = std::stoull(fields[13]);
    const unsigned long long stime = std::stoull(fields[14]);
    const long rss_pages = std::stol(fields[23]);
    s.cpu_ticks = utime + stime;
    s.rss_kib = rss_pages * (::sysconf(_SC_PAGESIZE) / 1024);
    out[static_cast<int>(pid)] = s;
  }
  ::closedir(d);
  return out;
}

}  // namespace

int top_command(int argc, const char* const* argv) {
  CLI::App app{"dlaunch top", "dlaunch top"};
  std::string log_dir;
  double interval_s = 1.0;
  add_log_dir_option(app, log_dir);
  app.add_option("--interval", interval_s, "sampling interval in seconds");
  if (auto done = parse_subcommand(app, argc, argv)) return *done;

  const auto first = sample_ranks();
  std::this_thread::sleep_for(std::chrono::duration<double>(interval_s));
  const auto second = sample_ranks();
  if (second.empty()) {
    console().out("no ranks of any dlaunch job on this machine\n");
    return 0;
  }
  const double ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
  console().out(formatted("%-28s  %4s  %7s  %6s  %9s  %s\n", "JOB", "RANK", "PID", "CPU%",
                          "RSS MiB", "COMMAND"));
  for (const auto& [pid, s] : second) {
    auto it = first.find(pid);
    const double cpu =
        it == first.end()
            ? 0.0
            : 100.0 * static_cast<double>(s.cpu_ticks - it->second.cpu_ticks) / ticks / interval_s;
    console().out(formatted("%-28s  %4s  %7d  %6.1f  %9.1f  %s\n", s.job.c_str(),
                            s.rank.empty() ? "-" : s.rank.c_str(), pid, cpu,
                            static_cast<double>(s.rss_kib) / 1024.0, s.command.c_str()));
  }
  return 0;
}

}  // namespace dlaunch
