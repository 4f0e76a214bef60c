// --tensorboard-dir and --checkpoint-dir on the agent of rank 0's host: sends
// the directory's files to the coordinator over the agent's rendezvous
// connection as FileChunks (transfer/directory_follower.h says which bytes).
// While the ranks run: every period (500 ms for event files) up to its bytes
// (1 MiB), and only while less than 512 KiB of output waits on the
// connection, so log lines never queue behind files. When a round's ranks have ended: everything
// left, before the agent reports AgentDone (at most 30 s; then it says what was not sent).
#pragma once

#include <asio.hpp>
#include <chrono>
#include <functional>
#include <string>

#include "rendezvous/client.h"
#include "transfer/directory_follower.h"

namespace dlaunch {

class DirectorySender {
 public:
  // `client` is asked anew each time: the agent drops its client when the
  // coordinator is gone. `flag` names the directory in warnings
  // ("--checkpoint-dir").
  struct Pace {
    std::chrono::milliseconds period{500};
    std::size_t bytes_per_tick = 1 << 20;
  };
  DirectorySender(asio::io_context& io, std::string root, DirectoryFollower::Options options,
                  Pace pace, std::string flag, std::function<RendezvousClient*()> client);

  // Sends while the ranks run; idempotent.
  void start();
  bool started() const { return started_; }
  // A file that came from the coordinator is not sent back to it.
  void mark_sent(const std::string& relative) { follower_.mark_sent(relative); }
  // Sends what is left, then calls `done` (also when there is no connection).
  void flush_then(std::function<void()> done);
  // No more sending: the agent is finishing.
  void stop();

 private:
  void tick();
  void flush_step(std::chrono::steady_clock::time_point deadline);
  void send(std::size_t budget);

  DirectoryFollower follower_;
  Pace pace_;
  std::string flag_;
  std::function<RendezvousClient*()> client_;
  asio::steady_timer timer_;
  std::function<void()> done_;
  bool started_ = false;
  bool stopped_ = false;
};

}  // namespace dlaunch
