#include "launcher/cli/job_commands.h"

#include <dirent.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <thread>

#include "launcher/config/options.h"
#include "launcher/job/job_record.h"

namespace dlaunch {
namespace {

namespace fs = std::filesystem;

enum class JobState { running, succeeded, failed, interrupted, lost };

struct Job {
  std::string dir;
  JobInfo info;
  std::optional<JobResult> result;
  JobState state = JobState::lost;
};

bool coordinator_alive(long long pid) {
  if (pid <= 0 || ::kill(static_cast<pid_t>(pid), 0) != 0) return false;
  // The pid may have been reused by something else since.
  std::ifstream cmdline("/proc/" + std::to_string(pid) + "/cmdline");
  std::string argv0;
  std::getline(cmdline, argv0, '\0');
  return argv0.find("dlaunch") != std::string::npos;
}

std::optional<Job> load_job(const std::string& dir) {
  auto info = read_job_info(dir);
  if (!info) return std::nullopt;
  Job job{dir, *info, read_job_result(dir), JobState::lost};
  if (job.result) {
    const int code = job.result->exit_code;
    job.state = code == 0                    ? JobState::succeeded
                : code == 130 || code == 143 ? JobState::interrupted
                                             : JobState::failed;
  } else if (coordinator_alive(job.info.coordinator_pid)) {
    job.state = JobState::running;
  }
  return job;
}

std::vector<Job> load_jobs(const std::string& log_dir) {
  std::vector<Job> jobs;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(log_dir, ec)) {
    if (!entry.is_directory()) continue;
    if (auto job = load_job(entry.path().string())) jobs.push_back(std::move(*job));
  }
  std::sort(jobs.begin(), jobs.end(), [](const Job& a, const Job& b) {
    return std::tie(a.info.started, a.info.name) < std::tie(b.info.started, b.info.name);
  });
  return jobs;
}

std::string state_text(const Job& job) {
  switch (job.state) {
    case JobState::running:
      return "running";
    case JobState::succeeded:
      return "succeeded";
    case JobState::failed:
      return "failed";
    case JobState::interrupted:
      return "interrupted";
    case JobState::lost:
      return "lost";
  }
  return "?";
}

std::string format_time(long long t) {
  if (t <= 0) return "-";
  const std::time_t tt = static_cast<std::time_t>(t);
  std::tm tm{};
  ::localtime_r(&tt, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

std::string format_duration(long long seconds) {
  if (seconds < 0) return "-";
  char buf[32];
  if (seconds < 60) {
    std::snprintf(buf, sizeof buf, "%llds", seconds);
  } else if (seconds < 3600) {
    std::snprintf(buf, sizeof buf, "%lldm%02llds", seconds / 60, seconds % 60);
  } else {
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", seconds / 3600, seconds / 60 % 60);
  }
  return buf;
}

long long duration_of(const Job& job) {
  const long long end = job.result ? job.result->finished : std::time(nullptr);
  return job.state == JobState::lost ? -1 : end - job.info.started;
}

std::string join_command(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) {
    const bool plain = !a.empty() && a.find_first_of(" \t\n'\"\\$`") == std::string::npos;
    out += (out.empty() ? "" : " ") + (plain ? a : "'" + a + "'");
  }
  return out;
}

// Rank log files of a job, by rank number.
std::map<int, std::string> rank_logs(const std::string& dir) {
  std::map<int, std::string> logs;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with("rank-") || !name.ends_with(".log")) continue;
    try {
      logs[std::stoi(name.substr(5))] = entry.path().string();
    } catch (const std::exception&) {
    }
  }
  return logs;
}

std::optional<Job> find_job(const std::string& log_dir, const std::string& name) {
  if (name.find('/') == std::string::npos) {
    if (auto job = load_job(log_dir + "/" + name)) return job;
  }
  std::fprintf(stderr, "dlaunch: error: no job named '%s' in %s (see dlaunch list)\n", name.c_str(),
               log_dir.c_str());
  return std::nullopt;
}

int cmd_list(const std::string& log_dir) {
  const auto jobs = load_jobs(log_dir);
  if (jobs.empty()) {
    std::printf("no jobs in %s\n", log_dir.c_str());
    return 0;
  }
  std::size_t width = 4;
  for (const auto& j : jobs) width = std::max(width, j.info.name.size());
  std::printf("%-*s  %-11s  %4s  %5s  %5s  %-19s  %8s  %s\n", static_cast<int>(width), "NAME",
              "STATUS", "EXIT", "NODES", "RANKS", "STARTED", "DURATION", "COMMAND");
  for (const auto& j : jobs) {
    const std::string exit = j.result ? std::to_string(j.result->exit_code) : "-";
    const std::string ranks =
        j.result && j.result->world_size > 0 ? std::to_string(j.result->world_size) : "-";
    std::printf("%-*s  %-11s  %4s  %5d  %5s  %-19s  %8s  %s\n", static_cast<int>(width),
                j.info.name.c_str(), state_text(j).c_str(), exit.c_str(), j.info.nnodes,
                ranks.c_str(), format_time(j.info.started).c_str(),
                format_duration(duration_of(j)).c_str(), join_command(j.info.command).c_str());
  }
  return 0;
}

int cmd_get(const std::string& log_dir, const std::string& name) {
  auto job = find_job(log_dir, name);
  if (!job) return 1;
  const auto& i = job->info;
  std::printf("name:      %s\n", i.name.c_str());
  std::string status = state_text(*job);
  if (job->result) status += " (exit code " + std::to_string(job->result->exit_code) + ")";
  std::printf("status:    %s\n", status.c_str());
  std::printf("mode:      %s, %d node%s\n", i.mode.c_str(), i.nnodes, i.nnodes == 1 ? "" : "s");
  std::string hosts;
  for (const auto& h : i.hosts) hosts += (hosts.empty() ? "" : ", ") + h;
  if (!hosts.empty()) std::printf("hosts:     %s\n", hosts.c_str());
  if (job->result && job->result->world_size > 0) {
    std::printf("ranks:     %d\n", job->result->world_size);
  }
  std::printf("command:   %s\n", join_command(i.command).c_str());
  std::printf("started:   %s\n", format_time(i.started).c_str());
  if (job->result) std::printf("finished:  %s\n", format_time(job->result->finished).c_str());
  std::printf("duration:  %s\n", format_duration(duration_of(*job)).c_str());
  if (job->state == JobState::running) {
    std::printf("coordinator pid: %lld\n", i.coordinator_pid);
  }
  if (job->result && job->result->restarts > 0) {
    std::printf("restarts:  %d\n", job->result->restarts);
  }
  if (job->result && !job->result->root_cause.empty()) {
    std::printf("root cause: %s\n", job->result->root_cause.c_str());
    for (const auto& l : job->result->root_cause_tail) std::printf("  | %s\n", l.c_str());
  }
  std::printf("logs:      %s\n", job->dir.c_str());
  for (const auto& [rank, path] : rank_logs(job->dir)) {
    std::error_code ec;
    std::printf("  rank-%d.log  %llu bytes\n", rank,
                static_cast<unsigned long long>(fs::file_size(path, ec)));
  }
  return 0;
}

// Prints the last `tail` lines (all when < 0) of a file from `offset` on and
// returns the offset after the last complete line.
std::uintmax_t print_lines(const std::string& path, std::uintmax_t offset, int tail,
                           const std::string& prefix) {
  std::ifstream in(path, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(offset));
  std::deque<std::string> kept;
  std::string line;
  std::uintmax_t consumed = offset;
  while (std::getline(in, line)) {
    if (in.eof()) break;  // an incomplete last line: wait for the rest
    consumed += line.size() + 1;
    if (tail < 0) {
      std::printf("%s%s\n", prefix.c_str(), line.c_str());
    } else {
      kept.push_back(line);
      if (static_cast<int>(kept.size()) > tail) kept.pop_front();
    }
  }
  for (const auto& l : kept) std::printf("%s%s\n", prefix.c_str(), l.c_str());
  std::fflush(stdout);
  return consumed;
}

int cmd_logs(const std::string& log_dir, const std::string& name, std::optional<int> rank, int tail,
             bool follow) {
  auto job = find_job(log_dir, name);
  if (!job) return 1;
  std::map<std::string, std::uintmax_t> offsets;
  auto pass = [&](int lines) {
    for (const auto& [r, path] : rank_logs(job->dir)) {
      if (rank && *rank != r) continue;
      const std::string prefix = rank ? "" : "[" + std::to_string(r) + "] ";
      const bool first = !offsets.contains(path);
      const std::uintmax_t from = first ? 0 : offsets[path];
      offsets[path] = print_lines(path, from, first ? lines : -1, prefix);
    }
  };
  if (rank && !rank_logs(job->dir).contains(*rank) && !follow) {
    std::fprintf(stderr, "dlaunch: error: job %s has no log for rank %d\n", name.c_str(), *rank);
    return 1;
  }
  pass(tail);
  while (follow) {
    const bool running = load_job(job->dir).value_or(*job).state == JobState::running;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    pass(-1);
    if (!running) break;  // one last pass after the job ended
  }
  return 0;
}

int cmd_stop(const std::string& log_dir, const std::string& name, int wait_s) {
  auto job = find_job(log_dir, name);
  if (!job) return 1;
  if (job->state != JobState::running) {
    std::fprintf(stderr, "dlaunch: job %s is not running (%s)\n", name.c_str(),
                 state_text(*job).c_str());
    return 1;
  }
  ::kill(static_cast<pid_t>(job->info.coordinator_pid), SIGTERM);
  std::printf("stopping job %s (SIGTERM to coordinator %lld)\n", name.c_str(),
              job->info.coordinator_pid);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(wait_s);
  while (std::chrono::steady_clock::now() < deadline) {
    if (!coordinator_alive(job->info.coordinator_pid)) {
      std::printf("job %s stopped\n", name.c_str());
      return 0;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::fprintf(stderr, "dlaunch: job %s still running after %d s\n", name.c_str(), wait_s);
  return 1;
}

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
    std::ifstream stat(base + "/stat");
    std::string line;
    std::getline(stat, line);
    const auto close = line.rfind(')');
    if (close == std::string::npos) continue;
    s.command = line.substr(line.find('(') + 1, close - line.find('(') - 1);
    std::istringstream fields(line.substr(close + 2));
    std::string field;
    unsigned long long utime = 0, stime = 0;
    long rss_pages = 0;
    for (int i = 3; fields >> field; ++i) {
      if (i == 14) utime = std::stoull(field);
      if (i == 15) stime = std::stoull(field);
      if (i == 24) {
        rss_pages = std::stol(field);
        break;
      }
    }
    s.cpu_ticks = utime + stime;
    s.rss_kib = rss_pages * (::sysconf(_SC_PAGESIZE) / 1024);
    out[static_cast<int>(pid)] = s;
  }
  ::closedir(d);
  return out;
}

int cmd_top(double interval_s) {
  const auto first = sample_ranks();
  std::this_thread::sleep_for(std::chrono::duration<double>(interval_s));
  const auto second = sample_ranks();
  if (second.empty()) {
    std::printf("no ranks of any dlaunch job on this machine\n");
    return 0;
  }
  const double ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
  std::printf("%-28s  %4s  %7s  %6s  %9s  %s\n", "JOB", "RANK", "PID", "CPU%", "RSS MiB",
              "COMMAND");
  for (const auto& [pid, s] : second) {
    auto it = first.find(pid);
    const double cpu =
        it == first.end()
            ? 0.0
            : 100.0 * static_cast<double>(s.cpu_ticks - it->second.cpu_ticks) / ticks / interval_s;
    std::printf("%-28s  %4s  %7d  %6.1f  %9.1f  %s\n", s.job.c_str(),
                s.rank.empty() ? "-" : s.rank.c_str(), pid, cpu,
                static_cast<double>(s.rss_kib) / 1024.0, s.command.c_str());
  }
  return 0;
}

}  // namespace

bool is_job_command(std::string_view word) {
  return word == "list" || word == "get" || word == "logs" || word == "stop" || word == "top";
}

int run_job_command(int argc, const char* const* argv) {
  const std::string command = argv[0];
  CLI::App app{"dlaunch " + command, "dlaunch " + command};
  std::string log_dir = default_log_dir();
  std::string job;
  std::optional<int> rank;
  int tail = -1;
  bool follow = false;
  int wait_s = 60;
  double interval = 1.0;
  app.add_option("--log-dir", log_dir, "state dir holding the job records")->capture_default_str();
  if (command == "get" || command == "logs" || command == "stop") {
    app.add_option("job", job, "job name (see dlaunch list)")->required();
  }
  if (command == "logs") {
    app.add_option("-r,--rank", rank, "only this rank, without prefix");
    app.add_option("-t,--tail", tail, "last N lines of each rank");
    app.add_flag("-f,--follow", follow, "keep printing new lines while the job runs");
  }
  if (command == "stop") app.add_option("--wait", wait_s, "seconds to wait for the stop");
  if (command == "top") app.add_option("--interval", interval, "sampling interval in seconds");
  try {
    std::vector<std::string> args;
    for (int i = argc - 1; i >= 1; --i) args.emplace_back(argv[i]);
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) {
      std::printf("%s", app.help().c_str());
      return 0;
    }
    std::fprintf(stderr, "dlaunch: error: %s\n", e.what());
    return 2;
  }
  if (command == "list") return cmd_list(log_dir);
  if (command == "get") return cmd_get(log_dir, job);
  if (command == "logs") return cmd_logs(log_dir, job, rank, tail, follow);
  if (command == "stop") return cmd_stop(log_dir, job, wait_s);
  return cmd_top(interval);
}

}  // namespace dlaunch
