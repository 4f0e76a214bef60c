// The process operations a RankSupervisor needs, behind an interface so that
// its stopping and sweeping rules are unit-tested without real processes. The
// system implementation forks ranks into their own process groups and finds
// leftovers through /proc (the agent is a child subreaper, so orphans of the
// job are re-parented to it and show up as its descendants).
#pragma once

#include <sys/types.h>

#include <optional>
#include <set>
#include <vector>

#include "agent/process.h"

namespace dlaunch {

struct ChildExit {
  pid_t pid = -1;
  int wait_status = 0;  // as waitpid() fills it
};

class ProcessOps {
 public:
  virtual ~ProcessOps() = default;

  // Starts a process in a new process group of its own, with its stdout and
  // stderr on pipes; an error when it cannot be started.
  virtual Result<SpawnedProcess> spawn(const SpawnRequest& request) = 0;
  virtual void signal_group(pid_t pgid, int signal) = 0;
  virtual void signal_pids(const std::vector<pid_t>& pids, int signal) = 0;
  // The process groups with a stopped process (SIGSTOP, Ctrl-Z).
  virtual std::set<pid_t> stopped_groups() = 0;
  // Every live descendant of this process, ranks included.
  virtual std::vector<pid_t> descendants() = 0;
  // One child that has exited, reaped without waiting; nullopt when none.
  virtual std::optional<ChildExit> reap_one() = 0;
};

class SystemProcessOps final : public ProcessOps {
 public:
  Result<SpawnedProcess> spawn(const SpawnRequest& request) override;
  void signal_group(pid_t pgid, int signal) override;
  void signal_pids(const std::vector<pid_t>& pids, int signal) override;
  std::set<pid_t> stopped_groups() override;
  std::vector<pid_t> descendants() override;
  std::optional<ChildExit> reap_one() override;
};

}  // namespace dlaunch
