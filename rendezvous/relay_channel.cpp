#include "rendezvous/relay_channel.h"

namespace dlaunch {

RelayChannel::RelayChannel(asio::io_context& io, int fd, std::size_t max_frame)
    : socket_(io, asio::local::stream_protocol(), fd),
      decoder_(max_frame),
      read_buffer_(new char[kReadBuffer]) {
  socket_.non_blocking(true);
}

void RelayChannel::start(Handler handler) {
  handler_ = std::move(handler);
  read_more();
}

void RelayChannel::read_more() {
  socket_.async_read_some(
      asio::buffer(read_buffer_.get(), kReadBuffer),
      [self = shared_from_this()](const asio::error_code& ec, std::size_t n) {
        if (self->closed_) return;
        if (ec) {
          self->close(ec == asio::error::eof ? "closed by the other end" : ec.message());
          return;
        }
        self->decoder_.feed(std::string_view(self->read_buffer_.get(), n));
        const auto read = self->decoder_.each([&self](Frame&& frame) {
          if (self->handler_.on_frame) self->handler_.on_frame(std::move(frame));
          return !self->closed_;
        });
        if (!read) self->close("bad frame: " + read.error());
        if (self->closed_) return;
        self->read_more();
      });
}

void RelayChannel::send(std::string frame) {
  if (closed_) return;
  queued_ += frame.size();
  queue_.push_back(std::move(frame));
  if (over_limit()) space_owed_ = true;
  if (!writing_) write_next();
}

// Frames go out in batches of up to kMaxWriteBatch bytes (at least one frame).
void RelayChannel::write_next() {
  if (closed_ || queue_.empty()) return;
  in_flight_.clear();
  queued_ -= take_write_batch(queue_, in_flight_);
  writing_ = true;
  asio::async_write(socket_, asio::buffer(in_flight_),
                    [self = shared_from_this()](const asio::error_code& ec, std::size_t) {
                      self->writing_ = false;
                      if (self->closed_) return;
                      if (ec) return self->close(ec.message());
                      if (self->space_owed_ && self->queued_ <= self->limit_ / 2) {
                        self->space_owed_ = false;
                        if (self->handler_.on_space) self->handler_.on_space();
                      }
                      self->write_next();
                    });
}

void RelayChannel::close(const std::string& reason) {
  if (closed_) return;
  closed_ = true;
  queue_.clear();
  queued_ = 0;
  asio::error_code ec;
  socket_.shutdown(asio::socket_base::shutdown_both, ec);
  socket_.close(ec);
  // Once: moved out before the call, which may close again.
  auto on_close = std::move(handler_.on_close);
  handler_.on_close = nullptr;
  if (on_close) on_close(reason);
}

}  // namespace dlaunch
