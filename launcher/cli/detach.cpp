#include "launcher/cli/detach.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "common/console.h"
#include "common/exit_codes.h"
#include "common/posix.h"

namespace dlaunch {
namespace {

void redirect(int fd, const char* path, int flags) {
  const int opened = ::open(path, flags | O_CLOEXEC, 0600);
  if (opened < 0) return;
  ::dup2(opened, fd);
  ::close(opened);
}

}  // namespace

std::optional<int> Detacher::fork_coordinator() {
  console().flush();
  std::fflush(nullptr);
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    console().error(std::string("--detach: cannot create a pipe: ") + std::strerror(errno));
    return kExitFailure;
  }
  const pid_t pid = ::fork();
  if (pid < 0) {
    console().error(std::string("--detach: cannot fork: ") + std::strerror(errno));
    return kExitFailure;
  }
  if (pid == 0) {
    ::close(fds[0]);
    report_fd_ = fds[1];
    ::setsid();  // no controlling terminal: a closed terminal or cron's exit cannot reach us
    redirect(0, "/dev/null", O_RDONLY);
    return std::nullopt;
  }
  ::close(fds[1]);
  // "ok <job>" or "failed <code>"; nothing at all: the child died first.
  const std::string report = read_all(fds[0]);
  ::close(fds[0]);
  if (report.starts_with("ok ")) {
    console().out(report.substr(3) + "\n");
    return kExitOk;
  }
  if (report.starts_with("failed ")) return std::atoi(report.c_str() + 7);
  int status = 0;
  ::waitpid(pid, &status, 0);
  console().error("--detach: the coordinator exited before the job was PENDING");
  return kExitFailure;
}

void Detacher::started(const std::string& job, const std::string& log_path) {
  if (report_fd_ < 0) return;
  console().flush();
  std::fflush(nullptr);
  redirect(1, "/dev/null", O_WRONLY);
  redirect(2, log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND);
  (void)write_all(report_fd_, "ok " + job);
  ::close(report_fd_);
  report_fd_ = -1;
}

void Detacher::failed(int code) {
  if (report_fd_ < 0) return;
  console().flush();
  (void)write_all(report_fd_, "failed " + std::to_string(code));
  ::close(report_fd_);
  report_fd_ = -1;
}

}  // namespace dlaunch
