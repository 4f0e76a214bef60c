#include "agent/probe_listener.h"

#include <array>
#include <memory>

namespace dlaunch {
namespace {

bool open_on(asio::ip::tcp::acceptor& acceptor, const asio::ip::tcp::endpoint& endpoint) {
  asio::error_code ec;
  acceptor.open(endpoint.protocol(), ec);
  if (!ec && endpoint.address().is_v6()) acceptor.set_option(asio::ip::v6_only(false), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  // Thousands of agents probe node 0 at once: take the kernel's largest backlog.
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (!ec) return true;
  asio::error_code ignored;
  acceptor.close(ignored);
  return false;
}

using Buffer = std::shared_ptr<std::array<char, 64 * 1024>>;

void discard(std::shared_ptr<asio::ip::tcp::socket> socket, Buffer buffer) {
  auto& s = *socket;
  auto& b = *buffer;
  s.async_read_some(asio::buffer(b), [socket = std::move(socket), buffer = std::move(buffer)](
                                         const asio::error_code& ec, std::size_t) mutable {
    if (ec) {
      asio::error_code ignored;
      socket->close(ignored);
      return;
    }
    discard(std::move(socket), std::move(buffer));
  });
}

}  // namespace

ProbeListener::ProbeListener(asio::io_context& io, std::uint16_t wanted)
    : acceptor_(std::make_shared<asio::ip::tcp::acceptor>(io)) {
  auto open = [this](std::uint16_t port) {
    return open_on(*acceptor_, {asio::ip::address_v6::any(), port}) ||
           open_on(*acceptor_, {asio::ip::address_v4::any(), port});
  };
  if (!(wanted != 0 && open(wanted)) && !open(0)) return;
  asio::error_code ec;
  port_ = acceptor_->local_endpoint(ec).port();
  if (ec) {
    port_ = 0;
    return;
  }
  accept(acceptor_);
}

void ProbeListener::accept(std::shared_ptr<asio::ip::tcp::acceptor> acceptor) {
  auto& a = *acceptor;
  a.async_accept(
      [acceptor = std::move(acceptor)](const asio::error_code& ec, asio::ip::tcp::socket socket) {
        if (ec == asio::error::operation_aborted || !acceptor->is_open()) return;
        // The prober closes first, so the TIME_WAIT is on its side and this
        // port binds cleanly for MASTER_PORT later.
        if (!ec) drain(std::make_shared<asio::ip::tcp::socket>(std::move(socket)));
        accept(acceptor);
      });
}

// Reads and discards until the peer closes, then closes: a probe sends
// nothing, and `dlaunch check`'s bulk test learns from the close that every
// byte arrived. The socket and the buffer live in the handler.
void ProbeListener::drain(std::shared_ptr<asio::ip::tcp::socket> socket) {
  discard(std::move(socket), std::make_shared<std::array<char, 64 * 1024>>());
}

void ProbeListener::close() {
  asio::error_code ignored;
  acceptor_->close(ignored);
}

}  // namespace dlaunch
