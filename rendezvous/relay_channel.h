// One end of the local socket between the coordinator and a rendezvous relay:
// whole frames in and out, in order. What is queued is bounded only by the
// caller: over_limit() says when to hold producers back, and on_space fires
// once the queue has drained to half after being over. As in Connection, the
// bytes of the write in flight belong to the channel until it completes,
// whatever close() does meanwhile.
#pragma once

#include <asio.hpp>
#include <deque>
#include <functional>
#include <memory>
#include <string>

#include "protocol/frame.h"
#include "rendezvous/write_batch.h"

namespace dlaunch {

class RelayChannel : public std::enable_shared_from_this<RelayChannel> {
 public:
  static constexpr std::size_t kDefaultLimit = 16 * 1024 * 1024;
  static constexpr std::size_t kReadBuffer = 256 * 1024;

  struct Handler {
    std::function<void(Frame&&)> on_frame;
    std::function<void(const std::string& reason)> on_close;
    std::function<void()> on_space;  // optional
  };

  // Takes ownership of `fd`, a connected stream socket.
  RelayChannel(asio::io_context& io, int fd, std::size_t max_frame);

  void start(Handler handler);
  // Queues a frame (encode_frame's result) whatever over_limit() says.
  void send(std::string frame);
  bool over_limit() const { return queued_ >= limit_; }
  std::size_t queued_bytes() const { return queued_; }
  void close(const std::string& reason);
  bool closed() const { return closed_; }

 private:
  void read_more();
  void write_next();

  asio::local::stream_protocol::socket socket_;
  FrameDecoder decoder_;
  Handler handler_;
  std::deque<std::string> queue_;
  std::size_t queued_ = 0;
  std::size_t limit_ = kDefaultLimit;
  bool space_owed_ = false;
  std::string in_flight_;
  bool writing_ = false;
  bool closed_ = false;
  std::unique_ptr<char[]> read_buffer_;
};

}  // namespace dlaunch
