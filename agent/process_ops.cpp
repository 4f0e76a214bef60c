#include "agent/process_ops.h"

#include <sys/wait.h>
#include <unistd.h>

#include "common/posix.h"

namespace dlaunch {

Result<SpawnedProcess> SystemProcessOps::spawn(const SpawnRequest& request) {
  return spawn_process(request);
}

void SystemProcessOps::signal_group(pid_t pgid, int signal) {
  dlaunch::signal_group(pgid, signal);
}

void SystemProcessOps::signal_pids(const std::vector<pid_t>& pids, int signal) {
  signal_all(pids, signal);
}

std::set<pid_t> SystemProcessOps::stopped_groups() {
  return stopped_process_groups();
}

std::vector<pid_t> SystemProcessOps::descendants() {
  return descendants_of(::getpid());
}

std::optional<ChildExit> SystemProcessOps::reap_one() {
  int status = 0;
  const pid_t pid = ::waitpid(-1, &status, WNOHANG);
  if (pid <= 0) return std::nullopt;
  return ChildExit{pid, status};
}

}  // namespace dlaunch
