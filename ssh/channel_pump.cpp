#include "ssh/channel_pump.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace dlaunch {
namespace {

// libssh2's channel window is 2 MiB; a buffer of this size per direction
// keeps the copies few without holding much.
constexpr std::size_t kChunk = 64 * 1024;

}  // namespace

ChannelPump::ChannelPump(LIBSSH2_CHANNEL* channel, int socket)
    : channel_(channel), socket_(socket) {
  ::fcntl(socket_, F_SETFL, ::fcntl(socket_, F_GETFL) | O_NONBLOCK);
}

ChannelPump::~ChannelPump() {
  if (channel_ != nullptr) libssh2_channel_free(channel_);
  if (socket_ >= 0) ::close(socket_);
}

void ChannelPump::fail(std::string why) {
  if (!failed_) error_ = std::move(why);
  failed_ = true;
}

short ChannelPump::poll_events() const {
  short events = 0;
  if (!socket_eof_ && to_channel_.empty()) events |= POLLIN;
  if (!to_socket_.empty()) events |= POLLOUT;
  return events;
}

bool ChannelPump::has_pending() const {
  if (done() || channel_eof_ || !to_socket_.empty()) return false;
  // Not libssh2_poll_channel_read: it fails (a negative "true") as soon as
  // any packet shorter than 5 bytes waits in the session's queue, such as a
  // server's one-byte answer to a keepalive, and a caller that trusted it
  // would spin on that packet for the rest of the session.
  unsigned long queued = 0;
  libssh2_channel_window_read_ex(channel_, &queued, nullptr);
  return queued > 0 || libssh2_channel_eof(channel_) != 0;
}

bool ChannelPump::step() {
  if (done()) return false;
  bool progress = channel_to_socket();
  progress = socket_to_channel() || progress;
  return progress;
}

bool ChannelPump::channel_to_socket() {
  bool progress = false;
  if (!channel_eof_ && to_socket_.empty()) {
    to_socket_.resize(kChunk);
    const ssize_t n = libssh2_channel_read(channel_, to_socket_.data(), to_socket_.size());
    to_socket_.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
    to_socket_sent_ = 0;
    if (n > 0) {
      progress = true;
    } else if (n < 0 && n != LIBSSH2_ERROR_EAGAIN) {
      fail("reading the channel failed (libssh2 error " + std::to_string(n) + ")");
      return false;
    } else if (libssh2_channel_eof(channel_)) {
      channel_eof_ = true;
      progress = true;
    }
  }
  while (to_socket_sent_ < to_socket_.size()) {
    const ssize_t n = ::send(socket_, to_socket_.data() + to_socket_sent_,
                             to_socket_.size() - to_socket_sent_, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) return progress;
      if (errno == EINTR) continue;
      fail(std::string("writing the socket failed: ") + std::strerror(errno));
      return false;
    }
    to_socket_sent_ += static_cast<std::size_t>(n);
    progress = true;
  }
  to_socket_.clear();
  if (channel_eof_ && !socket_shut_) {
    ::shutdown(socket_, SHUT_WR);
    socket_shut_ = true;
    progress = true;
  }
  return progress;
}

bool ChannelPump::socket_to_channel() {
  bool progress = false;
  if (!socket_eof_ && to_channel_.empty()) {
    to_channel_.resize(kChunk);
    ssize_t n;
    do {
      n = ::recv(socket_, to_channel_.data(), to_channel_.size(), 0);
    } while (n < 0 && errno == EINTR);
    to_channel_.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
    to_channel_sent_ = 0;
    if (n > 0) {
      progress = true;
    } else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
      // A reset is an end as well: what the peer meant to send is gone either way.
      socket_eof_ = true;
      progress = true;
    }
  }
  while (to_channel_sent_ < to_channel_.size()) {
    const ssize_t n = libssh2_channel_write(channel_, to_channel_.data() + to_channel_sent_,
                                            to_channel_.size() - to_channel_sent_);
    if (n == LIBSSH2_ERROR_EAGAIN) return progress;
    if (n < 0) {
      fail("writing the channel failed (libssh2 error " + std::to_string(n) + ")");
      return false;
    }
    to_channel_sent_ += static_cast<std::size_t>(n);
    progress = true;
  }
  to_channel_.clear();
  if (socket_eof_ && !eof_sent_) {
    const int rc = libssh2_channel_send_eof(channel_);
    if (rc == LIBSSH2_ERROR_EAGAIN) return progress;
    if (rc < 0) {
      fail("sending EOF on the channel failed (libssh2 error " + std::to_string(rc) + ")");
      return false;
    }
    eof_sent_ = true;
    progress = true;
  }
  return progress;
}

}  // namespace dlaunch
