// The agent runs as two processes: a tiny guardian and the worker that does the
// work. The guardian is a child subreaper and an ancestor of every rank, so if
// the worker is killed outright (kill -9, OOM killer), the ranks' orphaned
// descendants are re-parented to the guardian, which ends them all before it
// exits. If the guardian is killed, the worker gets SIGTERM (PDEATHSIG) and
// stops its ranks in order. Either way nothing of the job is left behind.
//
// A worker that is alive but stopped (SIGSTOP, Ctrl-Z on its terminal) or
// hung would hold its ranks for as long as it stays so, while the coordinator
// has long declared the node dead. So the worker also pulses: once its ranks
// run it writes a byte to a pipe every second (WorkerPulse), from the same
// event loop that answers the coordinator's heartbeats, and a worker silent
// for the heartbeat timeout is killed by the guardian, ending its ranks as
// the coordinator expects.
#pragma once

#include <asio.hpp>
#include <chrono>
#include <functional>

namespace dlaunch {

// Runs `work` in a forked worker and returns its exit code once the worker and
// every leftover descendant are gone. SIGINT and SIGTERM are passed on to it.
// `work` gets the pulse descriptor; once a byte has come through it, a worker
// silent for `silence_limit` is killed with SIGKILL.
int run_guarded(const std::function<int(int pulse_fd)>& work,
                std::chrono::milliseconds silence_limit);

// The signal (SIGINT, SIGTERM) the guardian last passed on to its worker in
// this process; 0 when none came: the run was stopped, not failed.
int guardian_forwarded_signal();

// How long the guardian lets a pulsing worker be silent, for a job whose
// heartbeat timeout is `heartbeat_timeout_s`: a little longer, so that the
// coordinator, which has the better message, declares the node dead first.
std::chrono::milliseconds worker_silence_limit(int heartbeat_timeout_s);

// The worker's side: from start() on, a byte on the pulse descriptor every
// second from the io_context's thread. Without a descriptor (-1) it does nothing.
class WorkerPulse {
 public:
  WorkerPulse(asio::io_context& io, int pulse_fd) : timer_(io), fd_(pulse_fd) {}
  void start();
  void stop();

 private:
  void beat();

  asio::steady_timer timer_;
  int fd_;
  bool running_ = false;
};

}  // namespace dlaunch
