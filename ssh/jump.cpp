#include "ssh/jump.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "ssh/channel_pump.h"
#include "ssh/known_hosts.h"

namespace dlaunch {

JumpTunnel::JumpTunnel(std::unique_ptr<SshSession> bastion, const std::string& host, int port)
    : bastion_(std::move(bastion)) {
  LIBSSH2_SESSION* s = bastion_->get();
  const std::string& label = bastion_->target().label;
  const std::string where = known_hosts_name(host, port);
  // The originator address is informational (sshd logs it); OpenSSH's -J
  // sends the loopback address as well.
  LIBSSH2_CHANNEL* channel = libssh2_channel_direct_tcpip_ex(s, host.c_str(), port, "127.0.0.1", 0);
  if (channel == nullptr) {
    throw SshError(label + ": cannot open a connection from the bastion to " + where + ": " +
                   bastion_->last_error() +
                   " (can the bastion reach that address and port, and does its sshd allow TCP "
                   "forwarding: AllowTcpForwarding?)");
  }
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
    const int err = errno;
    libssh2_channel_free(channel);
    throw SshError(label + ": cannot make a socket pair: " + std::strerror(err));
  }
  stop_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  inner_ = pair[0];
  pump_ = std::make_unique<ChannelPump>(channel, pair[1]);
  thread_ = std::thread([this] { run(); });
}

JumpTunnel::~JumpTunnel() {
  if (thread_.joinable()) {
    const std::uint64_t one = 1;
    (void)!::write(stop_fd_, &one, sizeof one);
    thread_.join();
  }
  pump_.reset();
  if (inner_ >= 0) ::close(inner_);
  if (stop_fd_ >= 0) ::close(stop_fd_);
  bastion_.reset();  // disconnects, now that nothing else uses its session
}

int JumpTunnel::take_socket() {
  const int fd = inner_;
  inner_ = -1;
  return fd;
}

void JumpTunnel::run() {
  LIBSSH2_SESSION* s = bastion_->get();
  libssh2_session_set_blocking(s, 0);
  // The host's session sends its own keepalives through the channel; these
  // keep the bastion's connection (and any NAT on the way to it) alive too.
  bastion_->start_keepalives();
  for (;;) {
    const bool progress = pump_->step();
    if (pump_->done()) break;
    int next_s = 0;
    const int keepalive = libssh2_keepalive_send(s, &next_s);
    if (keepalive < 0 && keepalive != LIBSSH2_ERROR_EAGAIN) break;
    if (progress || pump_->has_pending()) continue;
    short want = POLLIN;
    if (libssh2_session_block_directions(s) & LIBSSH2_SESSION_BLOCK_OUTBOUND) want |= POLLOUT;
    pollfd fds[3] = {{bastion_->socket(), want, 0},
                     {pump_->socket(), pump_->poll_events(), 0},
                     {stop_fd_, POLLIN, 0}};
    // The timeout only bounds how late a keepalive or an EOF that libssh2
    // read during a write is noticed.
    if (::poll(fds, 3, 1000) < 0 && errno != EINTR) break;
    if (fds[2].revents & POLLIN) break;
  }
  // Closing the pump's socket is how the host's session learns that the
  // bastion's connection is gone. The channel is freed in blocking mode, with
  // a short timeout, so that it is really closed.
  libssh2_session_set_blocking(s, 1);
  libssh2_session_set_timeout(s, 2000);
  pump_.reset();
}

}  // namespace dlaunch
