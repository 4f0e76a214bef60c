// Starting a rank and cleaning up after it. Each rank runs in its own process
// group (so one signal reaches its workers), dies with the agent
// (PR_SET_PDEATHSIG), and has its stdout and stderr on pipes. The agent is a
// child subreaper, so descendants that escape the group (setsid daemons,
// double-forked helpers) are re-parented to it and can still be found and killed.
#pragma once

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

#include "common/result.h"

namespace dlaunch {

struct SpawnedProcess {
  pid_t pid = -1;
  int stdout_fd = -1;
  int stderr_fd = -1;
  // Set when the child could not exec (or change to the working directory):
  // the one line to show as the rank's stderr. The child exits 127 (not
  // found) or 126 (found but not runnable), like a shell, and is reaped as
  // any rank.
  std::string exec_failure = {};
};

struct SpawnRequest {
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;
  std::string workdir;  // empty: inherit
};

// Forks and execs, and returns once the child has exec'd or failed to (an exec
// failure is the process's exec_failure); an error when no child could be
// made (pipes or fork: the system's limits).
Result<SpawnedProcess> spawn_process(const SpawnRequest& request);

}  // namespace dlaunch
