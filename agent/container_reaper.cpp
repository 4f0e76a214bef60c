#include "agent/container_reaper.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

#include "common/posix.h"

namespace dlaunch {
namespace {

[[noreturn]] void reap_when_closed(int watched, const ContainerHost& host) {
  // The agent's end may come with a hang-up or a signal to the session it
  // leaves; the reaper has its own work to finish first.
  for (const int s : {SIGHUP, SIGINT, SIGTERM, SIGPIPE}) ::signal(s, SIG_IGN);
  // A name of its own: `pkill dlaunch-agent` ends the agent, not its reaper.
  ::prctl(PR_SET_NAME, kSurvivorName);
  const int null = ::open("/dev/null", O_RDWR);
  for (int fd = 0; fd < 3; ++fd) ::dup2(null, fd);
  ::dup2(watched, 3);
  close_fds_from(4);
  char byte;
  while (true) {
    const ssize_t got = ::read(3, &byte, 1);
    if (got == 0 || (got < 0 && errno != EINTR)) break;
  }
  sweep_containers(host);
  ::_exit(0);
}

}  // namespace

std::optional<std::string> start_container_reaper(ContainerHost host) {
  int fds[2];
  int told[2];  // the intermediate child tells the reaper's pid through it
  if (::pipe2(fds, O_CLOEXEC) != 0) return std::nullopt;
  if (::pipe2(told, O_CLOEXEC) != 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return std::nullopt;
  }
  const std::string random = host.agent_token;
  const pid_t first = ::fork();
  if (first < 0) {
    for (const int fd : {fds[0], fds[1], told[0], told[1]}) ::close(fd);
    return std::nullopt;
  }
  if (first == 0) {
    // Twice forked, so that it is nobody's child here: the guardian ends all
    // of its descendants, and the reaper must outlast that.
    ::setsid();
    const pid_t reaper = ::fork();
    if (reaper != 0) {
      const std::int32_t pid = reaper;
      (void)!::write(told[1], &pid, sizeof pid);
      ::_exit(0);
    }
    ::close(fds[1]);
    ::close(told[0]);
    ::close(told[1]);
    host.agent_token = agent_token(::getpid(), process_start_ticks(::getpid()), random);
    reap_when_closed(fds[0], host);
  }
  ::close(fds[0]);
  ::close(told[1]);
  std::int32_t pid = 0;
  ssize_t got = 0;
  while ((got = ::read(told[0], &pid, sizeof pid)) < 0 && errno == EINTR) {
  }
  ::close(told[0]);
  int status = 0;
  while (::waitpid(first, &status, 0) < 0 && errno == EINTR) {
  }
  if (got != sizeof pid || pid <= 0) return std::nullopt;
  // fds[1] stays open, close-on-exec, in this process and the worker forked
  // from it: when the last of them is gone, the reaper reads end-of-file.
  return agent_token(pid, process_start_ticks(pid), random);
}

}  // namespace dlaunch
