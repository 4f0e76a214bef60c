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

namespace dlaunch {

struct SpawnedProcess {
  pid_t pid = -1;
  int stdout_fd = -1;
  int stderr_fd = -1;
};

struct SpawnRequest {
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;
  std::string workdir;  // empty: inherit
};

// Forks and execs. Exec failures are reported to the child's stderr pipe and the
// child exits 127 (like a shell), so the caller sees them as rank output.
SpawnedProcess spawn_process(const SpawnRequest& request);

// fork() for a child that will exec: every signal stays blocked across the fork
// until the child has put all handlers back to their defaults. Otherwise a
// signal meant for the child (a SIGTERM to a just-started rank) would run the
// parent's handler in it, which reports through a pipe shared with the parent,
// and the parent would believe the signal was its own. Returns as fork() does;
// the child returns with default handlers and an empty signal mask.
pid_t fork_with_default_signals();

// Closes every descriptor from `lowest` up (close_range, else one by one).
void close_fds_from(int lowest);

// Makes the calling process a child subreaper (Linux); false if unsupported.
bool become_subreaper();

// Every live descendant of `root` (found by walking /proc's parent links).
std::vector<pid_t> descendants_of(pid_t root);

// Sends `signal` to a process group and to each of the given processes,
// ignoring ones that are already gone.
void signal_group(pid_t pgid, int signal);
void signal_all(const std::vector<pid_t>& pids, int signal);

// Exit status in the shell convention: the code, or 128+N for signal N.
int shell_status(int wait_status);

}  // namespace dlaunch

namespace dlaunch {
// Ends every descendant of this process that is still alive: SIGCONT and
// SIGTERM, then SIGKILL after about a second, reaping as it goes. Blocking;
// for a subreaper's last act, when orphans of the job may be re-parented to it.
void end_descendants();

// "SIGTERM" for 15; the number as text when unknown.
std::string signal_name(int signal);
// A TCP port that was free on this host a moment ago (bind to port 0).
int find_free_port();
}  // namespace dlaunch
