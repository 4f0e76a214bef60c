#include "rendezvous/accept_queued.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

namespace dlaunch {

// accept4 rather than Asio's accept: the descriptor is close-on-exec from the
// start (ranks and agents are forked from these processes), and the peer's
// address comes with it (no getpeername).
asio::error_code accept_queued(asio::ip::tcp::acceptor& acceptor, int at_most,
                               const TakeConnection& take) {
  for (int taken = 0; taken < at_most; ++taken) {
    asio::ip::tcp::endpoint peer;
    auto length = static_cast<socklen_t>(peer.capacity());
    const int fd =
        ::accept4(acceptor.native_handle(), peer.data(), &length, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      // A peer that reset before its turn, or a signal: the next may be fine.
      if (errno == ECONNABORTED || errno == EINTR) continue;
      return {errno, asio::error::get_system_category()};
    }
    peer.resize(length);
    asio::ip::tcp::socket socket(acceptor.get_executor());
    asio::error_code ec;
    socket.assign(peer.protocol(), fd, ec);
    if (ec) {
      ::close(fd);
      continue;
    }
    take(std::move(socket), peer);
  }
  return {};
}

}  // namespace dlaunch
