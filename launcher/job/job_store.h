// The jobs under a state dir as the job commands see them: each job's records
// (job.toml, result.toml) read back, and its state decided from them. A job
// without a result is running only while its coordinator lives; a coordinator
// that died without writing one leaves the job "lost".
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "launcher/job/job_record.h"

namespace dlaunch {

// unknown: the job ended (its coordinator is gone) but its result.toml is
// empty or unreadable, e.g. written to a full disk: never shown as succeeded.
enum class JobState { running, succeeded, failed, interrupted, lost, unknown };

std::string_view job_state_name(JobState state);

// Pure: the state a job's records and its coordinator's liveness add up to.
// 130 and 143 are the coordinator's own exits on SIGINT and SIGTERM.
JobState decide_job_state(const std::optional<JobResult>& result, bool coordinator_alive);

struct Job {
  std::string dir;
  JobInfo info;
  std::optional<JobResult> result;
  JobState state = JobState::lost;
};

// Seconds from start to finish (or to `now` while running); -1 for a lost job,
// whose end is unknown.
long long job_duration(const Job& job, long long now);

// Whether `pid` is still a dlaunch process: the pid may have been reused since.
// Whether the coordinator of a job record still runs: its pid with the same
// start time (records from before start times were kept: a live process whose
// program is dlaunch itself, never dlaunch-agent).
bool coordinator_alive(const JobInfo& info);

// The job in `dir`, or nothing when it holds no readable job.toml.
std::optional<Job> load_job(const std::string& dir);

// Every job under `log_dir`, oldest first (by start time, then name).
std::vector<Job> load_jobs(const std::string& log_dir);

// The job called `name` under `log_dir`. A name with a '/' is never a job:
// it would reach outside the state dir.
std::optional<Job> find_job(const std::string& log_dir, const std::string& name);

// A job's rank log files (rank-<R>.log), by rank number.
std::map<int, std::string> rank_logs(const std::string& job_dir);

}  // namespace dlaunch
