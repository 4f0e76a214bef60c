// Starting a child process that runs another program, two ways. Either way the
// child gets an empty signal mask and every signal at its default: its parent
// blocks or handles signals of its own (the agent's signal sets, SIGPIPE
// ignored), and a child that inherited that would not stop when told.
//
// spawn_child (posix_spawn): a helper, such as the agent's GPU helper and
// every command run_captured runs (common/captured_command.h).
// fork_exec_child (fork and exec): a child that must get none of its parent's
// other descriptors, which posix_spawn cannot promise: the local agents and
// Slurm's srun, which must not hold the coordinator's sockets (the rendezvous
// listener among them) open after it is gone.
#pragma once

#include <sys/types.h>

#include <array>
#include <map>
#include <string>
#include <vector>

#include "common/result.h"

namespace dlaunch {

struct ChildSpawn {
  std::string program;       // what to run: a path, or with search_path a name
  bool search_path = false;  // look `program` up on PATH, as execvp does
  std::vector<std::string> argv;
  std::vector<std::string> env;  // "NAME=value": the child's whole environment
  // The descriptors that become the child's 0, 1 and 2; -1 opens /dev/null
  // there instead. Give them close-on-exec: only these copies reach the child.
  std::array<int, 3> stdio = {-1, -1, -1};
  // A process group of its own (its pid), so that the caller can kill the
  // helper together with whatever it started.
  bool own_process_group = false;
};

// The child's pid, or why it could not start (posix_spawn's error). A program
// that is not found may instead start a child that exits with 127.
Result<pid_t> spawn_child(const ChildSpawn& spawn);

struct ForkedChild {
  std::string program;       // what to run: a path, or with search_path a name
  bool search_path = false;  // look `program` up on PATH, as execvp does
  std::vector<std::string> argv;
  // The descriptors that become the child's 0, 1 and 2; -1 leaves the
  // parent's own there. Every other descriptor is closed in the child.
  std::array<int, 3> stdio = {-1, -1, -1};
  // What the child writes on its descriptor 2 when the program cannot run,
  // around the reason (strerror); it then exits with 127.
  std::string exec_error_before;
  std::string exec_error_after;
  // Variables the child gets on top of this process's environment
  // (environment_with).
  std::map<std::string, std::string> extra_env = {};
};

// Forks a child in a process group of its own (a terminal's Ctrl-C is the
// parent's to act on, in order) that runs `child.program` with this process's
// environment. Its pid, or why fork failed. Safe in a process with threads:
// nothing is allocated between fork and exec.
Result<pid_t> fork_exec_child(const ForkedChild& child);

// This process's environment as "NAME=value" entries.
std::vector<std::string> inherited_environment();
// This process's environment with `overrides` set: they win over inherited
// variables of the same name.
std::vector<std::string> environment_with(const std::map<std::string, std::string>& overrides);

}  // namespace dlaunch
