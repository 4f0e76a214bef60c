#include "agent/process.h"

#include "common/posix.h"

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

}  // namespace dlaunch
