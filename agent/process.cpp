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

// Where the child keeps the write end of the exec-status pipe while it
// closes everything else; fds 0-2 are the rank's stdin, stdout and stderr.
constexpr int kStatusFd = 3;

// What a child that could not become the rank sends back.
struct ExecFailure {
  enum Stage : int { kChdir = 1, kExec = 2 };
  int stage = 0;
  int error = 0;
};

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

Result<SpawnedProcess> spawn_process(const SpawnRequest& request) {
  if (request.argv.empty()) throw std::invalid_argument("empty command");
  int out[2];
  int err[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return fail(std::string("pipe: ") + std::strerror(errno));
  if (::pipe2(err, O_CLOEXEC) != 0) {
    const int e = errno;
    ::close(out[0]);
    ::close(out[1]);
    return fail(std::string("pipe: ") + std::strerror(e));
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
  // The child's exec failure comes back on this close-on-exec pipe, and the
  // parent waits for it (as posix_spawn does): the message is then written by
  // the agent, whole, before anything else can happen to the job, instead of
  // by a child that a Stop for another rank's failure may kill mid-write.
  int status[2];
  if (::pipe2(status, O_CLOEXEC) != 0) {
    const int e = errno;
    for (int fd : {out[0], out[1], err[0], err[1]}) ::close(fd);
    return fail(std::string("pipe: ") + std::strerror(e));
  }

  const pid_t pid = fork_with_default_signals();
  if (pid < 0) {
    const int e = errno;
    for (int fd : {out[0], out[1], err[0], err[1], status[0], status[1]}) ::close(fd);
    return fail(std::string("fork failed: ") + std::strerror(e));
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
    if (status[1] != kStatusFd) ::dup2(status[1], kStatusFd);
    ::fcntl(kStatusFd, F_SETFD, FD_CLOEXEC);
    close_fds_from(kStatusFd + 1);
    ExecFailure failure{};
    if (!request.workdir.empty() && ::chdir(request.workdir.c_str()) != 0) {
      failure = {ExecFailure::kChdir, errno};
    } else {
      ::execve(program.c_str(), argv.data(), envp.data());
      failure = {ExecFailure::kExec, errno};
    }
    (void)!::write(kStatusFd, &failure, sizeof failure);
    ::_exit(failure.stage == ExecFailure::kExec && failure.error != ENOENT ? 126 : 127);
  }
  ::close(status[1]);
  ExecFailure failure{};
  ssize_t got;
  do {
    got = ::read(status[0], &failure, sizeof failure);
  } while (got < 0 && errno == EINTR);
  ::close(status[0]);
  std::string failed;
  if (got == static_cast<ssize_t>(sizeof failure)) {
    failed = failure.stage == ExecFailure::kChdir
                 ? "dlaunch: cannot change to the working directory " + request.workdir + ": "
                 : "dlaunch: cannot run " + request.argv[0] + ": ";
    failed += std::strerror(failure.error);
  }
  ::setpgid(pid, pid);  // also in the parent, so the group exists before we signal it
  ::close(out[1]);
  ::close(err[1]);
  return SpawnedProcess{pid, out[0], err[0], std::move(failed)};
}

}  // namespace dlaunch
