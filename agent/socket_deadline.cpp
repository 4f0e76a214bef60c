#include "agent/socket_deadline.h"

namespace dlaunch {

void SocketDeadline::arm(asio::ip::tcp::socket& socket, std::chrono::milliseconds after,
                         std::shared_ptr<void> owner) {
  const unsigned this_arm = ++generation_;
  timer_.expires_after(after);
  timer_.async_wait(
      [this, this_arm, &socket, owner = std::move(owner)](const asio::error_code& ec) {
        if (ec || this_arm != generation_) return;
        expired_ = true;
        asio::error_code ignored;
        socket.close(ignored);
      });
}

void SocketDeadline::cancel() {
  ++generation_;
  timer_.cancel();
}

std::string connect_failure(const asio::error_code& ec) {
  if (ec == asio::error::connection_refused) return "refused";
  if (ec == asio::error::host_unreachable || ec == asio::error::network_unreachable)
    return "unreachable";
  return ec.message();
}

}  // namespace dlaunch
