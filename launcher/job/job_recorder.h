// Keeps a running job's record (job.toml) in step with its policy: written at
// every change of status, restart round or membership (an elastic job's
// history, each entry stamped when first written), and once at the end with the
// result. Joins alone do not rewrite it, so 10,000 nodes joining cost one
// write, not 10,000. Room for the last write is kept from the start (a job
// may fill its disk), so a job that ended is not shown LOST.
#pragma once

#include <optional>
#include <string>

#include "common/result.h"
#include "launcher/job/job_policy.h"
#include "launcher/record/job_record.h"
#include "launcher/record/space_reserve.h"

namespace dlaunch {

class JobRecorder {
 public:
  // An empty `job_dir` records nothing (tests, check runs).
  JobRecorder(std::string job_dir, JobInfo info);

  // Writes the record when the policy's status or round moved since the last write.
  void update(const JobPolicy& policy);
  // The final record, with the result.
  void finish(const JobPolicy& policy, const JobResult& result);

  const std::string& job_dir() const { return job_dir_; }

 private:
  void write(const JobPolicy& policy, const JobResult* result);
  Result<void> write_record(const JobResult* result);

  std::string job_dir_;
  JobInfo info_;
  SpaceReserve reserve_;
  std::optional<JobStatus> written_status_;
  int written_round_ = -1;
  bool warned_ = false;
};

// `dlaunch stop --grace S` leaves the grace for the coordinator in the job
// directory before it sends SIGTERM; the coordinator takes it on the signal.
Result<void> write_stop_request(const std::string& job_dir, int grace_s);
std::optional<int> take_stop_request(const std::string& job_dir);

}  // namespace dlaunch
