// POSIX process helpers shared by the agent (ranks, guardian) and the launcher
// (local agents, the coordinator as a subreaper).
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace dlaunch {

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

// The fields of /proc/PID/stat, field N of proc(5) at index N-1: [0] the pid,
// [1] the command name without its parentheses (it may hold spaces), [2] the
// state, [3] the parent pid, ... Empty when there is no such process.
std::vector<std::string> proc_stat(pid_t pid);

// The pid of every process under /proc (every process this pid namespace has).
std::vector<pid_t> process_ids();

// Every live descendant of `root`: its children, theirs, and so on, from
// /proc (each process's list of children; where the kernel has none, every
// process's parent link).
std::vector<pid_t> descendants_of(pid_t root);

// The process groups with a stopped process (state T or t: SIGSTOP, Ctrl-Z,
// a tracer), from one pass over /proc.
std::set<pid_t> stopped_process_groups();

// Sends `signal` to a process group and to each of the given processes,
// ignoring ones that are already gone.
void signal_group(pid_t pgid, int signal);
void signal_all(const std::vector<pid_t>& pids, int signal);

// Exit status in the shell convention: the code, or 128+N for signal N.
int shell_status(int wait_status);

// Ends every descendant of this process that is still alive: SIGCONT and
// SIGTERM, then SIGKILL after about a second, reaping as it goes. Blocking;
// for a subreaper's last act, when orphans of the job may be re-parented to it.
// A process named kSurvivorName, and what it runs, is left alone: the agent's
// container reaper (agent/container_reaper.h) has work to finish after the
// agent is gone, and removes itself when done.
void end_descendants();
inline constexpr const char* kSurvivorName = "dlaunch-reaper";

// This process's limit of open files (RLIMIT_NOFILE's soft limit; a very
// large number when unlimited or unknown).
std::size_t descriptor_limit();

// Raises the soft limit on open descriptors to the hard one, which is ours to
// take: the coordinator holds one per agent connection and rank pipe, and node
// 0's agent one per MASTER_ADDR probe in flight (thousands in a big job, where
// a common soft limit is 1,024). Children inherit it, as ranks do from torchrun
// under `ulimit -n`.
void raise_descriptor_limit();

// When `pid` started, in clock ticks since boot (/proc/PID/stat field 22);
// 0 when there is no such process, or it has ended and is a zombie. A pid and its start time name a
// process for good: a reused pid has another start time.
long long process_start_ticks(pid_t pid);

// Where execvp would find the program `name` (no '/' in it) on $PATH: the
// first regular, executable file of that name ("/bin:/usr/bin" when PATH is
// unset; an empty entry is the current directory). "" when there is none.
std::string find_on_path(std::string_view name);

// A stat's modification time in nanoseconds: a change within a second shows.
inline std::int64_t mtime_ns(const struct stat& st) {
  return static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
}

// The working directory, or "" when it cannot be told (deleted, too long).
std::string current_directory();

// Writes every byte of `data` to `fd`, retrying after signals; false on an
// error (errno says which; EIO for a write of nothing).
bool write_all(int fd, std::string_view data);

// Reads `fd` to its end, retrying after signals; what came before an error.
std::string read_all(int fd);

// This machine's name as gethostname(2) gives it; "" when it has none.
std::string this_host_name();
// This boot of this machine (/proc/sys/kernel/random/boot_id): another machine
// sharing a directory with this one, or this one after a reboot, has another.
// Empty where it cannot be read.
std::string this_boot_id();

// $HOME, else /etc/passwd's entry for this user (cron, `env -i`), else "/tmp".
// /etc/passwd is read directly, without NSS (common/host_lookup.h).
std::string home_directory();
// The same without the "/tmp": empty when neither has one.
std::string find_home_directory();
// dlaunch's cache on this machine: $XDG_CACHE_HOME/dlaunch when that is an
// absolute path, else <home>/.cache/dlaunch; empty without a home directory.
std::string dlaunch_cache_directory();
// This user's scratch directory on this machine, ${TMPDIR:-/tmp}/dlaunch-<uid>,
// made 0700 when missing: every agent of this user on this machine finds the
// same one, whatever its HOME or cache (two "hosts" of one machine, two jobs).
// Empty when it cannot be made or is not a directory this user owns (another
// user's, made first to catch what we would put there).
std::string user_temp_directory();

// "SIGTERM" for 15; the number as text when unknown.
std::string signal_name(int signal);

}  // namespace dlaunch
