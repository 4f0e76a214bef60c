// What `dlaunch top job` (and the ui's top page) gathers: the active jobs of a
// state dir and their rank processes on this machine over `interval_s`.
#pragma once

#include <string>

#include "launcher/cli/top_view.h"

namespace dlaunch {

TopJobs gather_top_jobs(const std::string& log_dir, double interval_s);

}  // namespace dlaunch
