// The record a run starts with, and taking its name in the state dir with the
// refusal printed the way every run prints it: node 0's (or a one-machine
// job's) record, and the own record of a manual-mode node other than 0.
#pragma once

#include <string>

#include "common/result.h"
#include "launcher/config/options.h"
#include "launcher/plan/plan.h"
#include "launcher/record/job_claim.h"
#include "launcher/record/job_record.h"

namespace dlaunch {

struct Claim {
  std::string name;
  std::string dir;
  JobInfo record;
};

// The PENDING record of a run of `plan`, as this process starts it: its
// coordinator is this process on this machine.
JobInfo new_job_info(const Plan& plan, const Options& o);

// Takes `name` in the state dir by `rule` (launcher/record/job_claim.h) and
// writes `info` there; else says why not, and fails with the exit code: the
// name belongs to an active job, or the dir is unusable. A detached run whose
// record cannot be written fails too (it could not be listed or stopped).
Result<Claim, int> claim_or_report(const Options& o, const std::string& name, NameRule rule,
                                   JobInfo info);

}  // namespace dlaunch
