#include "agent/guardian.h"

#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>

#include "common/posix.h"

namespace dlaunch {
namespace {

volatile sig_atomic_t g_worker = 0;

void forward_signal(int signal) {
  if (g_worker > 0) ::kill(static_cast<pid_t>(g_worker), signal);
}

}  // namespace

int run_guarded(const std::function<int()>& work) {
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  const pid_t guardian = ::getpid();
  const pid_t worker = ::fork();
  if (worker < 0) return work();  // no second process: run unguarded
  if (worker == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != guardian) return 143;  // the guardian died already
    return work();
  }
  g_worker = worker;
  struct sigaction forward {};
  forward.sa_handler = forward_signal;
  sigemptyset(&forward.sa_mask);
  ::sigaction(SIGINT, &forward, nullptr);
  ::sigaction(SIGTERM, &forward, nullptr);
  std::signal(SIGHUP, SIG_IGN);
  std::signal(SIGPIPE, SIG_IGN);
  int code = 1;
  for (;;) {
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, 0);
    if (pid < 0 && errno == EINTR) continue;
    if (pid < 0) break;
    if (pid == worker) {
      code = shell_status(status);
      break;
    }
  }
  g_worker = 0;
  end_descendants();
  return code;
}

}  // namespace dlaunch
