#include "agent/process.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <unordered_map>

namespace dlaunch {
namespace {

void write_all(int fd, std::string_view s) {
  while (!s.empty()) {
    const ssize_t n = ::write(fd, s.data(), s.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    s.remove_prefix(static_cast<std::size_t>(n));
  }
}

// PATH lookup against the rank's own PATH, done in the parent so that the
// child does no allocation between fork and exec.
std::string resolve_program(const std::string& program,
                            const std::map<std::string, std::string>& env) {
  if (program.find('/') != std::string::npos) return program;
  auto it = env.find("PATH");
  const std::string path = it != env.end() ? it->second : "/usr/local/bin:/usr/bin:/bin";
  std::size_t start = 0;
  const std::string_view dirs(path);
  while (start <= dirs.size()) {
    const auto end = dirs.find(':', start);
    const std::string_view dir =
        dirs.substr(start, end == std::string_view::npos ? end : end - start);
    std::string candidate(dir.empty() ? std::string_view(".") : dir);
    candidate += '/';
    candidate += program;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return program;
}

}  // namespace

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

SpawnedProcess spawn_process(const SpawnRequest& request) {
  if (request.argv.empty()) throw std::invalid_argument("empty command");
  int out[2];
  int err[2];
  if (::pipe2(out, O_CLOEXEC) != 0) throw std::runtime_error(std::strerror(errno));
  if (::pipe2(err, O_CLOEXEC) != 0) {
    ::close(out[0]);
    ::close(out[1]);
    throw std::runtime_error(std::strerror(errno));
  }
  const std::string program = resolve_program(request.argv[0], request.env);
  std::vector<std::string> env_strings;
  env_strings.reserve(request.env.size());
  for (const auto& [k, v] : request.env) env_strings.push_back(k + "=" + v);
  std::vector<char*> argv;
  for (const auto& a : request.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  const pid_t parent = ::getpid();

  const pid_t pid = fork_with_default_signals();
  if (pid < 0) {
    const int e = errno;
    for (int fd : {out[0], out[1], err[0], err[1]}) ::close(fd);
    throw std::runtime_error(std::string("fork failed: ") + std::strerror(e));
  }
  if (pid == 0) {
    // Child: only async-signal-safe calls from here on.
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(137);  // the agent died before prctl
    const int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, 0);
    ::dup2(out[1], 1);
    ::dup2(err[1], 2);
    close_fds_from(3);
    if (!request.workdir.empty() && ::chdir(request.workdir.c_str()) != 0) {
      const char* msg = "dlaunch: cannot change to the working directory\n";
      write_all(2, msg);
      ::_exit(127);
    }
    ::execve(program.c_str(), argv.data(), envp.data());
    const int e = errno;
    write_all(2, "dlaunch: cannot run ");
    write_all(2, request.argv[0]);
    write_all(2, ": ");
    write_all(2, ::strerror(e));
    write_all(2, "\n");
    ::_exit(e == ENOENT ? 127 : 126);
  }
  ::setpgid(pid, pid);  // also in the parent, so the group exists before we signal it
  ::close(out[1]);
  ::close(err[1]);
  return {pid, out[0], err[0]};
}

bool become_subreaper() {
  return ::prctl(PR_SET_CHILD_SUBREAPER, 1) == 0;
}

std::vector<pid_t> descendants_of(pid_t root) {
  std::unordered_multimap<pid_t, pid_t> children;
  DIR* dir = ::opendir("/proc");
  if (dir == nullptr) return {};
  while (dirent* entry = ::readdir(dir)) {
    char* end = nullptr;
    const long pid = std::strtol(entry->d_name, &end, 10);
    if (*end != '\0' || pid <= 0) continue;
    std::ifstream stat(std::string("/proc/") + entry->d_name + "/stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    // The command name is in parentheses and may contain spaces: parse after ')'.
    const auto close = line.rfind(')');
    if (close == std::string::npos || close + 4 > line.size()) continue;
    char state = 0;
    long ppid = 0;
    if (std::sscanf(line.c_str() + close + 2, "%c %ld", &state, &ppid) != 2) continue;
    if (state == 'Z') continue;
    children.emplace(static_cast<pid_t>(ppid), static_cast<pid_t>(pid));
  }
  ::closedir(dir);
  std::vector<pid_t> found;
  std::vector<pid_t> frontier{root};
  while (!frontier.empty()) {
    const pid_t parent = frontier.back();
    frontier.pop_back();
    auto [first, last] = children.equal_range(parent);
    for (auto it = first; it != last; ++it) {
      found.push_back(it->second);
      frontier.push_back(it->second);
    }
  }
  return found;
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

}  // namespace dlaunch

#include <netinet/in.h>
#include <sys/wait.h>

#include <sys/socket.h>
#include <thread>

namespace dlaunch {

void end_descendants() {
  for (int step = 0; step < 200; ++step) {
    while (::waitpid(-1, nullptr, WNOHANG) > 0) {
    }
    const auto left = descendants_of(::getpid());
    if (left.empty()) return;
    signal_all(left, step < 20 ? SIGTERM : SIGKILL);
    if (step == 0) signal_all(left, SIGCONT);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

std::string signal_name(int signal) {
  const char* name = ::sigabbrev_np(signal);
  return name ? std::string("SIG") + name : std::to_string(signal);
}

int find_free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = 0;
  int port = 0;
  socklen_t len = sizeof addr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  ::close(fd);
  return port;
}

}  // namespace dlaunch
