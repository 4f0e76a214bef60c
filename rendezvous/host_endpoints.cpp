#include "rendezvous/host_endpoints.h"

namespace dlaunch {

std::vector<asio::ip::tcp::endpoint> endpoints_without_nss(std::string_view host, int port) {
  std::vector<asio::ip::tcp::endpoint> out;
  for (const auto& address : lookup_without_nss(host)) {
    asio::error_code ec;
    const auto ip = asio::ip::make_address(address, ec);
    if (!ec) out.emplace_back(ip, static_cast<std::uint16_t>(port));
  }
  return out;
}

}  // namespace dlaunch
