#include "launcher/job/job_store.h"

#include "common/posix.h"

#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <tuple>

namespace dlaunch {

namespace fs = std::filesystem;

std::string_view job_state_name(JobState state) {
  switch (state) {
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
    case JobState::unknown:
      return "unknown";
  }
  return "?";
}

JobState decide_job_state(const std::optional<JobResult>& result, bool coordinator_alive) {
  if (result) {
    if (result->interrupted) return JobState::interrupted;
    return result->exit_code == 0 ? JobState::succeeded : JobState::failed;
  }
  return coordinator_alive ? JobState::running : JobState::lost;
}

long long job_duration(const Job& job, long long now) {
  const long long end = job.result ? job.result->finished : now;
  return job.state == JobState::lost || job.state == JobState::unknown ? -1
                                                                       : end - job.info.started;
}

bool coordinator_alive(const JobInfo& info) {
  const auto pid = static_cast<pid_t>(info.coordinator_pid);
  if (pid <= 0 || ::kill(pid, 0) != 0) return false;
  if (info.coordinator_start_ticks != 0)
    return process_start_ticks(pid) == info.coordinator_start_ticks;
  std::ifstream cmdline("/proc/" + std::to_string(pid) + "/cmdline");
  std::string argv0;
  std::getline(cmdline, argv0, '\0');
  return fs::path(argv0).filename() == "dlaunch";
}

std::optional<Job> load_job(const std::string& dir) {
  auto info = read_job_info(dir);
  if (!info) return std::nullopt;
  Job job{dir, *info, read_job_result(dir), JobState::lost};
  // Only a job without a result needs the /proc lookup.
  job.state = decide_job_state(job.result, !job.result && coordinator_alive(*info));
  std::error_code ec;
  if (job.state == JobState::lost && fs::exists(dir + "/result.toml", ec))
    job.state = JobState::unknown;
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

std::optional<Job> find_job(const std::string& log_dir, const std::string& name) {
  if (name.find('/') != std::string::npos) return std::nullopt;
  return load_job(log_dir + "/" + name);
}

std::map<int, std::string> rank_logs(const std::string& job_dir) {
  std::map<int, std::string> logs;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(job_dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with("rank-") || !name.ends_with(".log")) continue;
    try {
      logs[std::stoi(name.substr(5))] = entry.path().string();
    } catch (const std::exception&) {
    }
  }
  return logs;
}

}  // namespace dlaunch
