// Taking a job's name in the state dir. The check that no active job holds the
// name and the creation of the new job's record are one step under a lock on
// the state dir, so two dlaunch processes racing for one name (overlapping cron
// runs) never both start: exactly one gets it.
#pragma once

#include <optional>
#include <string>

#include "common/result.h"

#include "launcher/record/job_record.h"

namespace dlaunch {

struct ClaimedJob {
  std::string name;  // as taken (an unnamed job's name may get a -2, -3, ...)
  std::string dir;
  std::string archived_as;  // a finished job of the same name moved aside to this name
  std::string write_error;  // the record could not be written (the job goes on)
};

// The name belongs to a job that is still PENDING, RUNNING or RESTARTING.
struct NameTaken {
  std::string name;
  long long coordinator_pid = 0;
  JobStatus status = JobStatus::running;
  std::string elsewhere_host;  // the coordinator's machine, when not this one
};

// Why no name was taken: an active job holds it (`taken`), or the state dir
// cannot be used (`error` says why, naming the path).
struct ClaimRefused {
  std::optional<NameTaken> taken;
  std::string error;
};

// How a name already in the state dir is dealt with.
enum class NameRule {
  // Any name in use gets -2, -3, ... (a name dlaunch made up).
  numbered,
  // The user chose the name: refused while an active job holds it; a
  // finished (or lost) job of that name is moved aside to
  // "<name>.<its start time>" so that `dlaunch get NAME` shows the newest run.
  exact,
  // As exact, but while an active job holds it the new one gets -2, -3, ...
  // (a manual-mode node whose rank the rendezvous gives: two may share a
  // machine at once).
  exact_unless_active,
};

// Creates <log_dir>/<name> and writes `info` there (its name set to the one
// taken), by `rule`.
Result<ClaimedJob, ClaimRefused> claim_job(const std::string& log_dir, const std::string& name,
                                           NameRule rule, JobInfo info);

}  // namespace dlaunch
