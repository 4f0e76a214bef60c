#include "launcher/record/job_store.h"

#include "common/posix.h"

#include <signal.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <tuple>

namespace dlaunch {

namespace fs = std::filesystem;

JobStatus decide_job_status(const JobInfo& info, const std::optional<JobResult>& result,
                            bool coordinator_alive) {
  if (result) return final_status(*result);
  if (!is_active(info.status)) return info.status;
  return coordinator_alive ? info.status : JobStatus::lost;
}

long long job_duration(const Job& job, long long now) {
  const long long end = job.result ? job.result->finished : now;
  return job.status == JobStatus::lost ? -1 : end - job.info.started;
}

CoordinatorPlace coordinator_place(const JobInfo& info, const std::string& host_name,
                                   const std::string& boot_id) {
  if (info.coordinator_boot.empty() || boot_id.empty() || info.coordinator_boot == boot_id)
    return CoordinatorPlace::here;
  // Two machines of one name sharing a state dir are taken for one, rebooted.
  if (info.coordinator_host.empty() || info.coordinator_host == host_name)
    return CoordinatorPlace::rebooted;
  return CoordinatorPlace::elsewhere;
}

CoordinatorPlace coordinator_place(const JobInfo& info) {
  static const std::string host_name = this_host_name();
  static const std::string boot_id = this_boot_id();
  return coordinator_place(info, host_name, boot_id);
}

bool coordinator_alive(const JobInfo& info) {
  if (coordinator_place(info) != CoordinatorPlace::here) return false;
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
  Job job{dir, *info, read_job_result(dir), JobStatus::lost};
  // A finished run moved aside for a new one of its name goes by its directory's name.
  job.info.name = fs::path(dir).filename().string();
  // Only an active record needs the /proc lookup; another machine's is as written.
  job.elsewhere = coordinator_place(*info) == CoordinatorPlace::elsewhere;
  const bool alive =
      !job.result && is_active(info->status) && (job.elsewhere || coordinator_alive(*info));
  job.status = decide_job_status(job.info, job.result, alive);
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
    return std::tie(a.info.started_ms, a.info.name) > std::tie(b.info.started_ms, b.info.name);
  });
  return jobs;
}

std::optional<Job> find_job(const std::string& log_dir, const std::string& name) {
  if (name.find('/') != std::string::npos) return std::nullopt;
  return load_job(log_dir + "/" + name);
}

RankLogRounds rank_log_rounds(const std::string& job_dir) {
  RankLogRounds logs;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(job_dir, ec)) {
    const std::string name = entry.path().filename().string();
    // rank-<R>.log, or rank-<R>.<N>.log for restart N.
    if (!name.starts_with("rank-") || !name.ends_with(".log")) continue;
    const std::string_view middle = std::string_view(name).substr(5, name.size() - 9);
    const auto dot = middle.find('.');
    int rank = -1, round = 0;
    const auto number = [](std::string_view text, int& out) {
      const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), out);
      return error == std::errc() && end == text.data() + text.size() && !text.empty();
    };
    if (!number(middle.substr(0, dot), rank)) continue;
    if (dot != std::string_view::npos && !number(middle.substr(dot + 1), round)) continue;
    logs[rank][round] = entry.path().string();
  }
  return logs;
}

std::map<int, std::string> latest_rank_logs(const RankLogRounds& rounds) {
  std::map<int, std::string> logs;
  for (const auto& [rank, files] : rounds) logs[rank] = files.rbegin()->second;
  return logs;
}

std::map<int, std::string> rank_logs(const std::string& job_dir) {
  return latest_rank_logs(rank_log_rounds(job_dir));
}

}  // namespace dlaunch
