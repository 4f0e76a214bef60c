// The hosts a command's options name, as the commands that start agents
// (run, check, top node) load them: every diagnostic and warning printed.
#pragma once

#include "common/result.h"
#include "launcher/hosts/hosts_file.h"
#include "launcher/config/options.h"

namespace dlaunch {

// The hosts the options name (launcher/config/host_source.h), with the
// sources' warnings printed; else fails with the exit code (kExitUsage) after
// printing every diagnostic.
Result<HostsFile, int> load_hosts_or_report(const Options& o);

}  // namespace dlaunch
