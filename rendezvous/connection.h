// One framed, message-oriented TCP connection of the rendezvous protocol, used
// by both the server's sessions and the agent's client. It keeps itself alive
// with shared_from_this while reads or writes are pending; a malformed frame,
// a receive timeout or a socket error closes it and reports why exactly once.
//
// Sending has two lanes. The priority lane carries what says "alive" and
// "who": heartbeats and the handshake; it is never refused and goes out before
// anything queued, so a flood of rank output cannot delay a heartbeat past the
// peer's timeout. Everything else goes on the ordered lane, in order, so that
// a rank's exit and the agent's AgentDone never overtake that rank's output.
// The ordered lane is bounded in bytes: past its limit, output_full() tells
// the sender to hold its producers back until on_output_space fires; what is
// sent is always queued. The bytes of
// the write in flight belong to the connection until that write completes,
// whatever close() does meanwhile; a completion after close() touches nothing.
#pragma once

#include <asio.hpp>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "common/clock.h"
#include "common/spare_buffer.h"
#include "protocol/frame.h"
#include "protocol/messages.h"
#include "rendezvous/write_batch.h"

namespace dlaunch {

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  // Output queued per connection before the sender must hold back: enough to
  // keep a fast link busy for a while, small enough that thousands of agents
  // fit in the coordinator's memory.
  static constexpr std::size_t kDefaultOutputLimit = 4 * 1024 * 1024;
  // Frames go out coalesced (rendezvous/write_batch.h), so a heartbeat waits
  // behind at most kMaxWriteBatch bytes of output.
  // The largest read buffer: one read of a busy agent's stream.
  static constexpr std::size_t kReadBuffer = 64 * 1024;
  static constexpr std::size_t kFirstRead = 1024;

  struct Handler {
    std::function<void(proto::Message&&)> on_message;
    std::function<void(const std::string& reason)> on_close;
  };

  // `remote` names the peer in messages (the caller knows it: the accept's
  // endpoint or the address it connected to, no getpeername per connection).
  // Keepalive and no-delay are the caller's to set (enable_keepalive): a
  // server sets them once on its listener and accepted sockets inherit them.
  Connection(asio::ip::tcp::socket socket, std::size_t max_frame, std::string remote);
  ~Connection();

  void start(Handler handler);
  // Queues a message on its lane, past the ordered lane's limit too: a sender
  // that floods watches output_full().
  void send(const proto::Message& message);
  // An already encoded message, on the ordered lane.
  void send_frame(std::string frame);
  // send(LogLine{...}) without a buffer per line: while a write is under way
  // the line is encoded straight onto the end of the last queued buffer, up to
  // kCoalesce bytes each. A flood of rank output costs an append per line.
  void send_log_line(std::int32_t rank, proto::Stream stream, std::string_view text,
                     proto::LineEnd end);
  static constexpr std::size_t kCoalesce = 64 * 1024;
  bool output_full() const { return output_bytes_ >= output_limit_; }
  std::size_t output_queued_bytes() const { return output_bytes_; }
  void set_output_limit(std::size_t bytes) { output_limit_ = bytes; }
  // Called (on the connection's executor) once the output lane has drained to
  // half its limit after having reached it.
  void on_output_space(std::function<void()> callback) { on_output_space_ = std::move(callback); }
  // Closes after pending writes are flushed (bounded by a short timer).
  void close_after_flush(const std::string& reason);
  void close(const std::string& reason);

  void set_max_frame(std::size_t n);
  // Flow control on the receiving side: while paused nothing is read, so the
  // peer's send queue fills and it holds its producers back. The receive
  // timeout does not run meanwhile.
  void pause_reading();
  void resume_reading();
  // Closes the connection when nothing at all arrives for `timeout` (0: never).
  void set_receive_timeout(std::chrono::milliseconds timeout);
  // Closes it at `at` whatever arrives meanwhile, with `reason` (a handshake
  // that a peer could otherwise stretch for ever with a heartbeat a second);
  // time_point::max() takes it back. Needs a receive timeout to be set.
  void set_deadline(SteadyClock::time_point at, std::string reason);
  // Sends a Heartbeat every `interval` so that the peer's receive timeout holds.
  void enable_heartbeat(std::chrono::milliseconds interval);

  bool closed() const { return closed_; }
  std::size_t read_buffer_bytes() const { return read_capacity_; }
  const std::string& remote() const { return remote_; }
  asio::ip::tcp::socket& socket() { return socket_; }

 private:
  void read_more();
  void write_next();
  void take_batch();
  bool idle() const { return !writing_ && priority_.empty() && ordered_.empty(); }
  void enqueue_ordered(std::string frame);
  // The ordered lane holds `bytes` more: counted against the limit, and sent.
  void ordered_grew(std::size_t bytes);
  void arm_receive_timer();
  void wait_for_receive(SteadyClock::time_point deadline);
  void on_receive_deadline();
  void arm_heartbeat();

  asio::ip::tcp::socket socket_;
  FrameDecoder decoder_;
  Handler handler_;
  std::deque<std::string> priority_;
  std::deque<std::string> ordered_;
  std::size_t output_bytes_ = 0;
  std::size_t output_limit_ = kDefaultOutputLimit;
  bool output_waiting_ = false;  // the lane reached its limit: on_output_space is owed
  std::function<void()> on_output_space_;
  // The bytes being written. Owned here, never by a queue that close() clears,
  // and replaced only when the write that uses them has completed.
  std::string in_flight_;
  SpareBuffer spare_{kCoalesce, 2 * kMaxWriteBatch};  // a written batch's room, for the next lines
  bool writing_ = false;
  bool reading_paused_ = false;
  bool read_parked_ = false;  // a read completed while paused and was not re-armed
  bool closed_ = false;
  bool peer_closed_ = false;  // the peer's FIN arrived
  bool closing_after_flush_ = false;
  std::string close_reason_;
  std::string remote_;
  // Every connection starts reading into kFirstRead bytes; one whose reads
  // fill the buffer (a busy agent's stream) grows it, up to read_limit_ (the
  // frames the peer may send, at most kReadBuffer). Thousands of agents that
  // send a few small messages each so cost 1 KiB, not 64, and no large
  // allocation. Allocated without zeroing, and replaced only between reads.
  std::unique_ptr<char[]> read_buffer_;
  std::size_t read_capacity_ = 0;
  std::size_t read_wanted_ = kFirstRead;
  std::size_t read_limit_ = kFirstRead;
  // The receive timeout is lazy: a read only notes its time, and the timer,
  // armed once per timeout, re-arms itself for what is left when it fires.
  // Re-arming on every read cost a cancelled wait and a timer-queue update
  // per message, thousands of times a second on a busy coordinator.
  Timer receive_timer_;
  SteadyClock::time_point last_receive_{};
  SteadyClock::time_point deadline_ = SteadyClock::time_point::max();
  std::string deadline_reason_;
  Timer heartbeat_timer_;
  std::chrono::milliseconds receive_timeout_{0};
  std::chrono::milliseconds heartbeat_interval_{0};
};

// Keepalive (a dead peer is found in about 15 s + 3 x 5 s even if heartbeats
// are stuck behind a full send buffer) and no-delay, on a connected socket or
// on a listener, whose accepted sockets inherit them on Linux.
void enable_keepalive(int fd);

}  // namespace dlaunch
