// What `dlaunch check` and `dlaunch top node` run: a check-mode agent started
// on every host of the list (SSH, jump hosts, fork/exec for local ones, as a
// job starts them), CheckPolicy run to its end on one io_context, and what it
// found. The commands parse and print; this assembles the run.
#pragma once

#include "common/result.h"
#include "launcher/check/check_policy.h"
#include "launcher/check/check_result.h"
#include "launcher/config/options.h"
#include "launcher/hosts/hosts_file.h"

namespace dlaunch {

// `hosts` as the options name them (launcher/config/host_source.h); `policy`
// gives the timeouts and mode, its hosts and MASTER_ADDR sources are filled
// in from the plan. Returns the result, or fails with the exit code after
// reporting why nothing ran.
Result<CheckResult, int> launch_check(const Options& options, const HostsFile& hosts,
                                      CheckPolicy::Config policy);

}  // namespace dlaunch
