#include "agent/guardian.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <string>

#include "common/log.h"
#include "common/posix.h"

namespace dlaunch {
namespace {

volatile sig_atomic_t g_worker = 0;
volatile sig_atomic_t g_forwarded = 0;

void forward_signal(int signal) {
  g_forwarded = signal;
  if (g_worker > 0) ::kill(static_cast<pid_t>(g_worker), signal);
}

// How often the worker pulses; the guardian wakes as often to reap orphans
// and look at the time.
constexpr auto kPulseInterval = std::chrono::seconds(1);

// Reaps children until the worker is among them (true), or, with WNOHANG,
// until none has ended yet (false). Orphaned descendants are reaped on the way.
bool reap(pid_t worker, int* code, int options) {
  for (;;) {
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, options);
    if (pid < 0 && errno == EINTR) continue;
    if (pid <= 0) return pid < 0;  // no children left at all: the worker is gone too
    if (pid == worker) {
      *code = shell_status(status);
      return true;
    }
  }
}

}  // namespace

int run_guarded(const std::function<int(int pulse_fd)>& work,
                std::chrono::milliseconds silence_limit) {
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  const pid_t guardian = ::getpid();
  int pulse[2] = {-1, -1};
  // The worker's end is close-on-exec (ranks must not hold it open) and
  // non-blocking (a stopped guardian must not stop the worker).
  if (::pipe2(pulse, O_CLOEXEC) != 0) pulse[0] = pulse[1] = -1;
  if (pulse[1] >= 0) ::fcntl(pulse[1], F_SETFL, O_NONBLOCK);
  const pid_t worker = ::fork();
  if (worker < 0) return work(-1);  // no second process: run unguarded
  if (worker == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != guardian) return 143;  // the guardian died already
    if (pulse[0] >= 0) ::close(pulse[0]);
    return work(pulse[1]);
  }
  if (pulse[1] >= 0) ::close(pulse[1]);
  g_worker = worker;
  struct sigaction forward {};
  forward.sa_handler = forward_signal;
  sigemptyset(&forward.sa_mask);
  ::sigaction(SIGINT, &forward, nullptr);
  ::sigaction(SIGTERM, &forward, nullptr);
  std::signal(SIGHUP, SIG_IGN);
  std::signal(SIGPIPE, SIG_IGN);
  std::signal(SIGTSTP, SIG_IGN);  // as the worker does (Agent::start)
  int code = 1;
  bool worker_gone = false;
  bool pulsing = false;  // a pulse came: silence from now on means trouble
  auto last_pulse = std::chrono::steady_clock::now();
  // Until the worker's end of the pipe closes (it exits, or is killed): wake
  // for each pulse or once per interval, reap orphans, watch the silence.
  while (pulse[0] >= 0 && !worker_gone) {
    pollfd p{pulse[0], POLLIN, 0};
    const int ready =
        ::poll(&p, 1, static_cast<int>(kPulseInterval / std::chrono::milliseconds(1)));
    if (ready > 0) {
      char drained[64];
      const ssize_t n = ::read(pulse[0], drained, sizeof drained);
      if (n == 0) break;
      if (n > 0) {
        pulsing = true;
        last_pulse = std::chrono::steady_clock::now();
      }
    }
    worker_gone = reap(worker, &code, WNOHANG);
    const auto silent = std::chrono::steady_clock::now() - last_pulse;
    if (!worker_gone && pulsing && silent >= silence_limit) {
      log::error("this agent (pid ", worker, ") gave no sign of life for ",
                 std::chrono::duration_cast<std::chrono::seconds>(silent).count(),
                 " s (stopped or hung): ending its ranks");
      ::kill(worker, SIGKILL);
      pulsing = false;
    }
  }
  if (!worker_gone) reap(worker, &code, 0);
  if (pulse[0] >= 0) ::close(pulse[0]);
  g_worker = 0;
  end_descendants();
  return code;
}

int guardian_forwarded_signal() {
  return g_forwarded;
}

std::chrono::milliseconds worker_silence_limit(int heartbeat_timeout_s) {
  return std::chrono::milliseconds(heartbeat_timeout_s * 1500 + 1000);
}

void WorkerPulse::start() {
  if (fd_ < 0 || running_) return;
  running_ = true;
  beat();
}

void WorkerPulse::stop() {
  running_ = false;
  timer_.cancel();
}

void WorkerPulse::beat() {
  if (!running_) return;
  const char one = 1;
  (void)!::write(fd_, &one, 1);  // a full pipe means the guardian is behind: nothing to add
  timer_.expires_after(kPulseInterval);
  timer_.async_wait([this](const asio::error_code& ec) {
    if (!ec) beat();
  });
}

}  // namespace dlaunch
