// The `dlaunch` command from parsed arguments to exit code: parse options, load
// the hosts file, plan, then either print the plan, run a coordinator, or (on a
// manual-mode node other than 0) run this node's agent in-process.
#pragma once

#include "common/exit_codes.h"

namespace dlaunch {

int run_dlaunch(int argc, const char* const* argv);

}  // namespace dlaunch
