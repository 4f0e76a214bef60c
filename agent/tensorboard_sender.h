// --tensorboard-dir on the agent of rank 0's host: sends the directory's files
// to the coordinator over the agent's rendezvous connection as FileChunks.
// While the ranks run: every 500 ms up to 1 MiB, and only while less than
// 512 KiB of output waits on the connection, so log lines never queue behind
// event files. When a round's ranks have ended: everything left, before the
// agent reports AgentDone (at most 30 s; then it says what was not sent).
#pragma once

#include <asio.hpp>
#include <chrono>
#include <functional>
#include <string>

#include "agent/directory_follower.h"
#include "rendezvous/client.h"

namespace dlaunch {

class TensorboardSender {
 public:
  // `client` is asked anew each time: the agent drops its client when the
  // coordinator is gone.
  TensorboardSender(asio::io_context& io, std::string root,
                    std::function<RendezvousClient*()> client);

  void start();
  // Sends what is left, then calls `done` (also when there is no connection).
  void flush_then(std::function<void()> done);
  // No more sending: the agent is finishing.
  void stop();

 private:
  void tick();
  void flush_step(std::chrono::steady_clock::time_point deadline);
  void send(std::size_t budget);

  DirectoryFollower follower_;
  std::function<RendezvousClient*()> client_;
  asio::steady_timer timer_;
  std::function<void()> done_;
  bool stopped_ = false;
};

}  // namespace dlaunch
