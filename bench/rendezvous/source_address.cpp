#include "bench/rendezvous/source_address.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstdint>

namespace dlaunch::load {

namespace {
constexpr std::uint32_t kFirstSource = (127U << 24) | (1U << 16);  // 127.1.0.0
constexpr std::uint32_t kLastSource = (127U << 24) | 0xfffffeU;    // below 127.255.255.255
}  // namespace

bool bind_node_source(int fd, const sockaddr* destination, int node) {
  if (destination->sa_family != AF_INET || node < 0) return true;
  const auto* to = reinterpret_cast<const sockaddr_in*>(destination);
  if ((ntohl(to->sin_addr.s_addr) >> 24) != 127) return true;
  const std::uint32_t source = kFirstSource + static_cast<std::uint32_t>(node);
  if (source > kLastSource) return true;
  const int on = 1;
  if (::setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &on, sizeof on) != 0) return false;
  sockaddr_in from{};
  from.sin_family = AF_INET;
  from.sin_addr.s_addr = htonl(source);
  return ::bind(fd, reinterpret_cast<const sockaddr*>(&from), sizeof from) == 0;
}

}  // namespace dlaunch::load
