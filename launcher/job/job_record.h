// A job's directory under the state dir: <log-dir>/<job>/ holds rank-<R>.log,
// job.toml (written at start: command, mode, nodes, coordinator pid, start time)
// and result.toml (written at the end: exit code, root cause and its last
// lines, restarts, world size). Directories are 0700, files 0600. The job's
// secret is never written here. The job commands (list, get, logs, stop) read
// these files back.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace dlaunch {

struct JobInfo {
  std::string name;
  std::string mode;
  int nnodes = 1;
  std::vector<std::string> command;
  long long coordinator_pid = 0;
  long long started = 0;  // unix seconds
  std::vector<std::string> hosts;
};

struct JobResult {
  int exit_code = 0;
  std::string root_cause;  // one line; empty on success
  std::vector<std::string> root_cause_tail;
  int restarts = 0;
  int world_size = 0;
  long long finished = 0;  // unix seconds
};

// Creates the job directory (and its parents, 0700). If `job` is taken, appends
// -2, -3, ... and returns the name actually used. Throws std::runtime_error.
std::string create_job_dir(const std::string& log_dir, const std::string& job,
                           std::string* job_dir);

void write_job_info(const std::string& job_dir, const JobInfo& info);
void write_job_result(const std::string& job_dir, const JobResult& result);
std::optional<JobInfo> read_job_info(const std::string& job_dir);
std::optional<JobResult> read_job_result(const std::string& job_dir);

}  // namespace dlaunch
