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
  // The coordinator's start time in clock ticks since boot (/proc/PID/stat
  // field 22): with the pid, it tells the coordinator from a process that
  // reused its pid.
  long long coordinator_start_ticks = 0;
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
  // dlaunch itself was stopped (Ctrl-C, SIGTERM, `dlaunch stop`); a rank that
  // exits 130 or 143 on its own is a failure, not an interruption.
  bool interrupted = false;
};

// Creates the job directory (and its parents, 0700). If `job` is taken, appends
// -2, -3, ... and returns the name actually used. Throws std::runtime_error.
std::string create_job_dir(const std::string& log_dir, const std::string& job,
                           std::string* job_dir);

// Each record is written whole or not at all: to a temporary file in the job
// directory, flushed to disk, then renamed over the final name, so a reader (or
// a crash) never sees half a record and a failed write never empties an old
// one. Returns nothing on success, else one line naming the file and the
// system's reason ("cannot write <dir>/result.toml: No space left on device")
// for the caller to report: a job whose result was not recorded must not later
// read as succeeded. A killed writer can leave a hidden ".<name>.XXXXXX"
// temporary behind; readers never look at it.
[[nodiscard]] std::optional<std::string> write_job_info(const std::string& job_dir,
                                                        const JobInfo& info);
[[nodiscard]] std::optional<std::string> write_job_result(const std::string& job_dir,
                                                          const JobResult& result);
std::optional<JobInfo> read_job_info(const std::string& job_dir);
std::optional<JobResult> read_job_result(const std::string& job_dir);

}  // namespace dlaunch
