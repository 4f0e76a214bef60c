#include "rendezvous/connection.h"

#include <utility>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>

#include "common/log.h"

namespace dlaunch {

void enable_keepalive(int fd) {
  int on = 1, idle = 15, interval = 5, count = 3;
  ::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof count);
}

Connection::Connection(asio::ip::tcp::socket socket, std::size_t max_frame, std::string remote)
    : socket_(std::move(socket)),
      decoder_(max_frame),
      remote_(std::move(remote)),
      read_limit_(std::clamp(max_frame, kFirstRead, kReadBuffer)),
      receive_timer_(socket_.get_executor()),
      heartbeat_timer_(socket_.get_executor()) {}

Connection::~Connection() = default;

void Connection::start(Handler handler) {
  handler_ = std::move(handler);
  arm_receive_timer();
  read_more();
}

namespace {
// Heartbeats and the handshake: they prove the peer alive and who it is, and
// carry no order with respect to rank output.
bool is_priority(const proto::Message& message) {
  return std::holds_alternative<proto::Heartbeat>(message) ||
         std::holds_alternative<proto::Hello>(message) ||
         std::holds_alternative<proto::Challenge>(message) ||
         std::holds_alternative<proto::Join>(message) ||
         std::holds_alternative<proto::Welcome>(message) ||
         std::holds_alternative<proto::Reject>(message);
}
}  // namespace

void Connection::send(const proto::Message& message) {
  if (closed_ || closing_after_flush_) return;
  if (is_priority(message)) {
    priority_.push_back(proto::encode(message));
    if (!writing_) write_next();
    return;
  }
  enqueue_ordered(proto::encode(message));
}

void Connection::send_frame(std::string frame) {
  if (closed_ || closing_after_flush_) return;
  enqueue_ordered(std::move(frame));
}

void Connection::send_log_line(std::int32_t rank, proto::Stream stream, std::string_view text,
                               proto::LineEnd end) {
  if (closed_ || closing_after_flush_) return;
  // A line goes onto the last buffer while it has room for it; a new buffer
  // gets its room at once (the room of the last write, if that is free), so
  // that a flood neither grows buffers step by step nor allocates per buffer.
  const std::size_t frame = text.size() + proto::kLogLineOverhead;
  if (ordered_.empty() || ordered_.back().size() + frame > ordered_.back().capacity()) {
    ordered_.push_back(spare_.take(frame));
  }
  std::string& buffer = ordered_.back();
  const std::size_t before = buffer.size();
  proto::append_log_line(buffer, rank, stream, text, end);
  ordered_grew(buffer.size() - before);
}

void Connection::enqueue_ordered(std::string frame) {
  const std::size_t bytes = frame.size();
  ordered_.push_back(std::move(frame));
  ordered_grew(bytes);
}

void Connection::ordered_grew(std::size_t bytes) {
  output_bytes_ += bytes;
  if (output_full()) output_waiting_ = true;
  if (!writing_) write_next();
}

// Moves the next frames into in_flight_: priority first, then ordered, up to
// kMaxWriteBatch bytes (at least one frame).
void Connection::take_batch() {
  // The last write's buffer becomes the next lines' buffer (take_write_batch
  // would free it by moving a queued one into its place).
  spare_.give_back(std::move(in_flight_));
  in_flight_.clear();
  take_write_batch(priority_, in_flight_);
  output_bytes_ -= take_write_batch(ordered_, in_flight_);
}

void Connection::write_next() {
  if (closed_) {
    writing_ = false;
    return;
  }
  if (priority_.empty() && ordered_.empty()) {
    writing_ = false;
    if (closing_after_flush_) close(close_reason_);
    return;
  }
  take_batch();
  writing_ = true;
  asio::async_write(socket_, asio::buffer(in_flight_),
                    [self = shared_from_this()](const asio::error_code& ec, std::size_t) {
                      // After close() the queues are gone and the owner has been
                      // told; nothing here may run.
                      if (self->closed_) return;
                      if (ec) {
                        self->close("write failed: " + ec.message());
                        return;
                      }
                      if (self->output_waiting_ && self->output_bytes_ <= self->output_limit_ / 2) {
                        self->output_waiting_ = false;
                        if (self->on_output_space_) self->on_output_space_();
                        if (self->closed_) return;
                      }
                      self->write_next();
                    });
}

void Connection::set_max_frame(std::size_t n) {
  decoder_.set_max_frame(n);
  read_limit_ = std::clamp(n, kFirstRead, kReadBuffer);
}

void Connection::read_more() {
  if (read_capacity_ < read_wanted_) {
    read_buffer_ = std::make_unique_for_overwrite<char[]>(read_wanted_);
    read_capacity_ = read_wanted_;
  }
  socket_.async_read_some(
      asio::buffer(read_buffer_.get(), read_capacity_),
      [self = shared_from_this()](const asio::error_code& ec, std::size_t n) {
        if (self->closed_) return;
        if (ec == asio::error::eof) {
          self->peer_closed_ = true;
          self->close("connection closed by peer");
          return;
        }
        if (ec) {
          self->close("read failed: " + ec.message());
          return;
        }
        self->last_receive_ = SteadyClock::now();
        if (n == self->read_capacity_)
          self->read_wanted_ = std::min(self->read_capacity_ * 4, self->read_limit_);
        self->decoder_.feed(std::string_view(self->read_buffer_.get(), n));
        const auto read = self->decoder_.each([&self](Frame&& frame) {
          auto message = proto::decode(frame.type, frame.payload);
          if (!message) {
            self->close("malformed message of type " + std::to_string(frame.type));
            return false;
          }
          if (std::holds_alternative<proto::Heartbeat>(*message)) return true;
          if (self->handler_.on_message) self->handler_.on_message(std::move(*message));
          return !self->closed_;
        });
        if (!read) self->close("bad frame: " + read.error());
        if (self->closed_) return;
        if (self->reading_paused_) {
          self->read_parked_ = true;
          return;
        }
        self->read_more();
      });
}

void Connection::pause_reading() {
  if (reading_paused_ || closed_) return;
  reading_paused_ = true;
  // Not reading is our choice, not the peer's silence.
  receive_timer_.cancel();
}

void Connection::resume_reading() {
  if (!reading_paused_ || closed_) return;
  reading_paused_ = false;
  arm_receive_timer();
  if (read_parked_) {
    read_parked_ = false;
    read_more();
  }
}

void Connection::set_receive_timeout(std::chrono::milliseconds timeout) {
  receive_timeout_ = timeout;
  arm_receive_timer();
}

void Connection::set_deadline(SteadyClock::time_point at, std::string reason) {
  deadline_ = at;
  deadline_reason_ = std::move(reason);
  arm_receive_timer();
}

void Connection::arm_receive_timer() {
  if (receive_timeout_.count() <= 0 || closed_ || reading_paused_) {
    receive_timer_.cancel();
    return;
  }
  last_receive_ = SteadyClock::now();
  wait_for_receive(last_receive_ + receive_timeout_);
}

void Connection::wait_for_receive(SteadyClock::time_point deadline) {
  receive_timer_.expires_at(std::min(deadline, deadline_));
  receive_timer_.async_wait([weak = weak_from_this()](const asio::error_code& ec) {
    auto self = weak.lock();
    if (!ec && self) self->on_receive_deadline();
  });
}

// The deadline counted from an earlier read: wait out what is left since the
// latest one, or give up on a peer that has been silent for the whole timeout.
void Connection::on_receive_deadline() {
  if (closed_ || reading_paused_ || receive_timeout_.count() <= 0) return;
  const auto now = SteadyClock::now();
  if (now >= deadline_) return close(deadline_reason_);
  const auto deadline = last_receive_ + receive_timeout_;
  if (now < deadline) return wait_for_receive(deadline);
  close("no message for " + std::to_string(receive_timeout_.count() / 1000) +
        " s (peer silent or link down)");
}

void Connection::enable_heartbeat(std::chrono::milliseconds interval) {
  heartbeat_interval_ = interval;
  arm_heartbeat();
}

void Connection::arm_heartbeat() {
  if (heartbeat_interval_.count() <= 0 || closed_) return;
  heartbeat_timer_.expires_after(heartbeat_interval_);
  heartbeat_timer_.async_wait([weak = weak_from_this()](const asio::error_code& ec) {
    auto self = weak.lock();
    if (ec || !self || self->closed_) return;
    // Only when idle: frames in flight already prove we are alive.
    if (self->idle()) self->send(proto::Heartbeat{});
    self->arm_heartbeat();
  });
}

void Connection::close_after_flush(const std::string& reason) {
  if (closed_) return;
  if (idle()) {
    close(reason);
    return;
  }
  closing_after_flush_ = true;
  close_reason_ = reason;
  // A peer that stops reading must not hold us: give the flush two seconds.
  receive_timeout_ = std::chrono::milliseconds(2000);
  arm_receive_timer();
}

void Connection::close(const std::string& reason) {
  if (closed_) return;
  closed_ = true;
  asio::error_code ec;
  receive_timer_.cancel();
  heartbeat_timer_.cancel();
  // The shutdown sends our FIN even where a forked child still holds the
  // descriptor; a peer that has closed already needs none (one system call
  // less for each of thousands of agents leaving at the end of a job).
  if (!peer_closed_) socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ec);
  socket_.close(ec);
  // The write in flight, if any, still reads in_flight_: leave it alone.
  priority_.clear();
  ordered_.clear();
  output_bytes_ = 0;
  on_output_space_ = nullptr;
  auto on_close = std::move(handler_.on_close);
  handler_ = {};
  if (on_close) on_close(reason);
}

}  // namespace dlaunch
