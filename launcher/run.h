// The `dlaunch` command from parsed arguments to exit code: parse options, load
// the hosts file, plan, then either print the plan, run a coordinator, or (on a
// manual-mode node other than 0) run this node's agent in-process.
#pragma once

namespace dlaunch {

// Exit codes of dlaunch itself; a failing rank's own code is passed through.
enum ExitCode : int {
  kExitOk = 0,
  kExitFailure = 1,
  kExitUsage = 2,
  kExitInterrupted = 130,
};

int run_dlaunch(int argc, const char* const* argv);

}  // namespace dlaunch
