#include "common/posix.h"

#include "common/host_lookup.h"

#include <dirent.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>
#include <unordered_map>

namespace dlaunch {

void close_fds_from(int lowest) {
#ifdef SYS_close_range
  if (::syscall(SYS_close_range, lowest, ~0U, 0) == 0) return;
#endif
  const long max = ::sysconf(_SC_OPEN_MAX);
  for (long fd = lowest; fd < max; ++fd) ::close(static_cast<int>(fd));
}

pid_t fork_with_default_signals() {
  sigset_t all, saved;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &saved);
  const pid_t pid = ::fork();
  if (pid != 0) {
    ::pthread_sigmask(SIG_SETMASK, &saved, nullptr);
    return pid;
  }
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig != SIGKILL && sig != SIGSTOP) ::signal(sig, SIG_DFL);
  }
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  return 0;
}

bool become_subreaper() {
  return ::prctl(PR_SET_CHILD_SUBREAPER, 1) == 0;
}

std::vector<std::string> proc_stat(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return {};
  // The command name is in parentheses and may contain spaces and ')': it
  // runs from the first '(' to the last ')'.
  const auto open = line.find('(');
  const auto close = line.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) return {};
  std::vector<std::string> fields{line.substr(0, open - (open > 0 ? 1 : 0)),
                                  line.substr(open + 1, close - open - 1)};
  std::istringstream rest(line.substr(close + 1));
  for (std::string field; rest >> field;) fields.push_back(std::move(field));
  return fields;
}

std::vector<pid_t> process_ids() {
  std::vector<pid_t> pids;
  DIR* dir = ::opendir("/proc");
  if (dir == nullptr) return pids;
  while (dirent* entry = ::readdir(dir)) {
    char* end = nullptr;
    const long pid = std::strtol(entry->d_name, &end, 10);
    if (*end == '\0' && pid > 0) pids.push_back(static_cast<pid_t>(pid));
  }
  ::closedir(dir);
  return pids;
}

std::set<pid_t> stopped_process_groups() {
  std::set<pid_t> groups;
  for (const pid_t pid : process_ids()) {
    const auto fields = proc_stat(pid);
    // [2] the state, [4] the process group.
    if (fields.size() > 4 && (fields[2] == "T" || fields[2] == "t"))
      groups.insert(static_cast<pid_t>(std::atol(fields[4].c_str())));
  }
  return groups;
}

namespace {

// The parent of `pid` while it runs; nullopt once it is gone or has ended.
std::optional<pid_t> live_parent(pid_t pid) {
  const auto fields = proc_stat(pid);
  if (fields.size() < 4 || fields[2] == "Z") return std::nullopt;
  return static_cast<pid_t>(std::atol(fields[3].c_str()));
}

// The live children of `pid`, from /proc/PID/task/TID/children (each thread
// lists the children it forked); nullopt where the kernel has no such file
// (CONFIG_PROC_CHILDREN).
std::optional<std::vector<pid_t>> listed_children(pid_t pid) {
  const std::string task_dir = "/proc/" + std::to_string(pid) + "/task";
  DIR* dir = ::opendir(task_dir.c_str());
  if (dir == nullptr) return std::vector<pid_t>{};  // gone since it was listed
  std::vector<pid_t> children;
  bool have_files = true;
  while (dirent* entry = ::readdir(dir)) {
    if (entry->d_name[0] == '.') continue;
    std::ifstream file(task_dir + "/" + entry->d_name + "/children");
    if (!file) {
      // A thread that has just ended has no directory any more; a kernel
      // without the file has none for any thread.
      struct stat st {};
      if (::stat((task_dir + "/" + entry->d_name).c_str(), &st) == 0) have_files = false;
      continue;
    }
    for (long child = 0; file >> child;)
      if (live_parent(static_cast<pid_t>(child))) children.push_back(static_cast<pid_t>(child));
  }
  ::closedir(dir);
  if (!have_files) return std::nullopt;
  return children;
}

// Every descendant of `root`, by `children_of` (a process's live children;
// nullopt when it cannot tell, which ends the walk with nullopt).
template <class ChildrenOf>
std::optional<std::vector<pid_t>> walk_down(pid_t root, ChildrenOf children_of) {
  std::vector<pid_t> found;
  std::vector<pid_t> frontier{root};
  while (!frontier.empty()) {
    const pid_t parent = frontier.back();
    frontier.pop_back();
    const std::optional<std::vector<pid_t>> children = children_of(parent);
    if (!children) return std::nullopt;
    found.insert(found.end(), children->begin(), children->end());
    frontier.insert(frontier.end(), children->begin(), children->end());
  }
  return found;
}

}  // namespace

std::vector<pid_t> descendants_of(pid_t root) {
  // Each process's own list of children costs reads in proportion to the
  // tree, where the scan reads every process of the machine: an agent's
  // guardian sweeps its leftovers once at its end, and a thousand agents
  // ending together on one machine (a test of a large check) would otherwise
  // read a million files.
  if (auto found = walk_down(root, listed_children)) return std::move(*found);
  // Without the lists: every live process's parent link, one /proc/N/stat each.
  std::unordered_multimap<pid_t, pid_t> children;
  for (const pid_t pid : process_ids()) {
    if (const auto parent = live_parent(pid)) children.emplace(*parent, pid);
  }
  return *walk_down(root, [&children](pid_t parent) {
    std::vector<pid_t> of_parent;
    auto [first, last] = children.equal_range(parent);
    for (auto it = first; it != last; ++it) of_parent.push_back(it->second);
    return std::optional(std::move(of_parent));
  });
}

void signal_group(pid_t pgid, int signal) {
  if (pgid > 0) ::kill(-pgid, signal);
}

void signal_all(const std::vector<pid_t>& pids, int signal) {
  for (pid_t p : pids) {
    if (p > 0) ::kill(p, signal);
  }
}

int shell_status(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return 1;
}

namespace {

std::vector<pid_t> descendants_to_end() {
  auto all = descendants_of(::getpid());
  std::vector<pid_t> spared;
  for (const pid_t pid : all) {
    const auto fields = proc_stat(pid);
    if (fields.size() > 1 && fields[1] == kSurvivorName) {
      spared.push_back(pid);
      const auto below = descendants_of(pid);
      spared.insert(spared.end(), below.begin(), below.end());
    }
  }
  std::erase_if(all, [&](pid_t pid) { return std::ranges::find(spared, pid) != spared.end(); });
  return all;
}

}  // namespace

void end_descendants() {
  for (int step = 0; step < 200; ++step) {
    while (::waitpid(-1, nullptr, WNOHANG) > 0) {
    }
    const auto left = descendants_to_end();
    if (left.empty()) return;
    signal_all(left, step < 20 ? SIGTERM : SIGKILL);
    if (step == 0) signal_all(left, SIGCONT);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

std::size_t descriptor_limit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY)
    return static_cast<std::size_t>(-1) / 2;
  return static_cast<std::size_t>(limit.rlim_cur);
}

void raise_descriptor_limit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &limit);
  }
}

long long process_start_ticks(pid_t pid) {
  const auto fields = proc_stat(pid);
  // A zombie has ended; only its parent has not looked yet.
  if (fields.size() < 22 || fields[2] == "Z" || fields[2] == "X") return 0;
  return std::atoll(fields[21].c_str());
}

std::string find_on_path(std::string_view name) {
  const char* env = std::getenv("PATH");
  // execvp's search path when PATH is unset.
  const std::string path = env ? env : "/bin:/usr/bin";
  std::size_t start = 0;
  while (start <= path.size()) {
    const std::size_t end = std::min(path.find(':', start), path.size());
    // An empty entry is the current directory, for execvp as for the shell.
    const std::string dir = end == start ? "." : path.substr(start, end - start);
    const std::string candidate = dir + "/" + std::string(name);
    struct stat st {};
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        ::access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
    start = end + 1;
  }
  return "";
}

std::string current_directory() {
  char cwd[4096];
  return ::getcwd(cwd, sizeof cwd) != nullptr ? std::string(cwd) : std::string();
}

std::string signal_name(int signal) {
  const char* name = ::sigabbrev_np(signal);
  return name ? std::string("SIG") + name : std::to_string(signal);
}

bool write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = EIO;
      return false;
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

std::string read_all(int fd) {
  std::string text;
  char buffer[64 * 1024];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return text;
    text.append(buffer, static_cast<std::size_t>(n));
  }
}

std::string this_host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "";
  return name;
}

std::string this_boot_id() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(in, id);
  return id;
}

std::string home_directory() {
  if (auto home = find_home_directory(); !home.empty()) return home;
  return "/tmp";
}

std::string find_home_directory() {
  if (const char* home = std::getenv("HOME"); home && *home) return home;
  // /etc/passwd read directly: the static agent has no NSS (common/host_lookup.h).
  return home_from_passwd(::getuid());
}

std::string user_temp_directory() {
  const char* tmp = std::getenv("TMPDIR");
  const std::string dir =
      std::string(tmp && *tmp == '/' ? tmp : "/tmp") + "/dlaunch-" + std::to_string(::getuid());
  ::mkdir(dir.c_str(), 0700);
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::getuid()) return {};
  return dir;
}

std::string dlaunch_cache_directory() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg == '/')
    return std::string(xdg) + "/dlaunch";
  const std::string home = find_home_directory();
  return home.empty() ? std::string() : home + "/.cache/dlaunch";
}

}  // namespace dlaunch
