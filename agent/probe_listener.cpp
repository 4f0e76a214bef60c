#include "agent/probe_listener.h"

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
  if (ec) acceptor.close(ec);
  return !ec;
}

}  // namespace

ProbeListener::ProbeListener(asio::io_context& io)
    : acceptor_(std::make_shared<asio::ip::tcp::acceptor>(io)) {
  if (!open_on(*acceptor_, {asio::ip::address_v6::any(), 0}) &&
      !open_on(*acceptor_, {asio::ip::address_v4::any(), 0})) {
    return;
  }
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
        if (!ec) {
          // The prober closes first, so the TIME_WAIT is on its side and this port
          // binds cleanly for MASTER_PORT later. The socket lives in its handler.
          auto held = std::make_shared<asio::ip::tcp::socket>(std::move(socket));
          auto byte = std::make_shared<char>();
          held->async_read_some(asio::buffer(byte.get(), 1),
                                [held, byte](const asio::error_code&, std::size_t) {});
        }
        accept(acceptor);
      });
}

void ProbeListener::close() {
  asio::error_code ignored;
  acceptor_->close(ignored);
}

}  // namespace dlaunch
