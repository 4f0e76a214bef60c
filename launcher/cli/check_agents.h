// What `dlaunch check` and `dlaunch top node` share: a check-mode agent started
// on every host the options name (SSH, jump hosts, fork/exec for local ones, as
// a job starts them), CheckPolicy run to its end on one io_context, and what it
// found.
#pragma once

#include "common/result.h"
#include "launcher/check/check_policy.h"
#include "launcher/check/check_result.h"
#include "launcher/config/options.h"

namespace dlaunch {

// `o` names the hosts (resolve_host_source done); `policy` gives the timeouts
// and mode, its hosts and MASTER_ADDR sources are filled in from the plan.
// Returns the result, or fails with the exit code after reporting why nothing ran.
Result<CheckResult, int> run_check_agents(Options& o, CheckPolicy::Config policy);

}  // namespace dlaunch
