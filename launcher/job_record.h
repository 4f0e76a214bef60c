// A job's directory under the state dir: <log-dir>/<job>/ holding rank-<R>.log
// files and job.json (command, nodes, start and end, result, root cause), made
// 0700 with files 0600. The job's secret is never written here.
#pragma once

#include <string>
#include <vector>

namespace dlaunch {

struct JobResult {
  int exit_code = 0;
  std::string root_cause;  // one line; empty on success
  std::vector<std::string> root_cause_tail;
  int restarts = 0;
};

// Creates the job directory (and its parents, 0700). If `job` is taken, appends
// -2, -3, ... and returns the name actually used. Throws std::runtime_error.
std::string create_job_dir(const std::string& log_dir, const std::string& job,
                           std::string* job_dir);

void write_job_started(const std::string& job_dir, const std::string& job,
                       const std::vector<std::string>& command, const std::string& mode,
                       int nnodes);
void write_job_finished(const std::string& job_dir, const JobResult& result);

std::string json_escape(const std::string& s);

}  // namespace dlaunch
