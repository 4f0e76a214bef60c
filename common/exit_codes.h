// Exit codes of dlaunch itself; a failing rank's own code is passed through,
// and a rank killed by signal N gives 128+N, as in a shell.
#pragma once

namespace dlaunch {

enum ExitCode : int {
  kExitOk = 0,
  kExitFailure = 1,
  kExitUsage = 2,
  kExitHung = 124,  // --hang-timeout, as timeout(1)
  kExitInterrupted = 130,
};

}  // namespace dlaunch
