// One framed, message-oriented TCP connection of the rendezvous protocol, used
// by both the server's sessions and the agent's client. It keeps itself alive
// with shared_from_this while reads or writes are pending; a malformed frame,
// a receive timeout or a socket error closes it and reports why exactly once.
#pragma once

#include <asio.hpp>
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <string>

#include "protocol/frame.h"
#include "protocol/messages.h"

namespace dlaunch {

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  struct Handler {
    std::function<void(proto::Message&&)> on_message;
    std::function<void(const std::string& reason)> on_close;
  };

  Connection(asio::ip::tcp::socket socket, std::size_t max_frame);
  ~Connection();

  void start(Handler handler);
  void send(const proto::Message& message);
  void send_raw(std::string bytes);
  // Closes after pending writes are flushed (bounded by a short timer).
  void close_after_flush(const std::string& reason);
  void close(const std::string& reason);

  void set_max_frame(std::size_t n) { decoder_.set_max_frame(n); }
  // Closes the connection when nothing at all arrives for `timeout` (0: never).
  void set_receive_timeout(std::chrono::milliseconds timeout);
  // Sends a Heartbeat every `interval` so that the peer's receive timeout holds.
  void enable_heartbeat(std::chrono::milliseconds interval);

  bool closed() const { return closed_; }
  const std::string& remote() const { return remote_; }
  asio::ip::tcp::socket& socket() { return socket_; }

 private:
  void read_more();
  void write_next();
  void arm_receive_timer();
  void arm_heartbeat();

  asio::ip::tcp::socket socket_;
  FrameDecoder decoder_;
  Handler handler_;
  std::deque<std::string> outbox_;
  bool writing_ = false;
  bool closed_ = false;
  bool closing_after_flush_ = false;
  std::string close_reason_;
  std::string remote_;
  std::array<char, 64 * 1024> read_buffer_{};
  asio::steady_timer receive_timer_;
  asio::steady_timer heartbeat_timer_;
  std::chrono::milliseconds receive_timeout_{0};
  std::chrono::milliseconds heartbeat_interval_{0};
};

void enable_keepalive(asio::ip::tcp::socket& socket);

}  // namespace dlaunch
