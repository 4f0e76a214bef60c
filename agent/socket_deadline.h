#pragma once
// A deadline on a socket's pending work (a connect, then maybe a transfer):
// when it passes, the socket is closed, so that whatever is pending completes
// with an error and its owner asks expired() to tell a timeout from a refusal.
// The agent's MASTER_ADDR probe and its peer bandwidth test both connect this
// way; connect_failure() words their errors alike.

#include <asio.hpp>
#include <chrono>
#include <memory>
#include <string>

namespace dlaunch {

class SocketDeadline {
 public:
  explicit SocketDeadline(const asio::any_io_executor& executor) : timer_(executor) {}

  // Closes `socket` `after` from now unless re-armed or cancelled first. `owner`
  // (who holds this and the socket) stays alive until the wait ends. A later
  // arm() replaces the earlier deadline, also one whose wait already finished
  // and is only queued.
  void arm(asio::ip::tcp::socket& socket, std::chrono::milliseconds after,
           std::shared_ptr<void> owner);
  void cancel();
  bool expired() const { return expired_; }

 private:
  asio::steady_timer timer_;
  unsigned generation_ = 0;  // a wait of an earlier arm() or before cancel() does nothing
  bool expired_ = false;
};

// "refused", "unreachable", or the error's own message: how a failed connect
// reads in a probe's or a peer test's table.
std::string connect_failure(const asio::error_code& ec);

}  // namespace dlaunch
