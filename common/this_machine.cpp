#include "common/this_machine.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>

#include "common/address.h"
#include "common/posix.h"
#include "common/text.h"

namespace dlaunch {
namespace {

std::string numeric(const sockaddr* address) {
  char text[INET6_ADDRSTRLEN] = {};
  if (address->sa_family == AF_INET) {
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(address)->sin_addr, text,
                sizeof text);
  } else if (address->sa_family == AF_INET6) {
    ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(address)->sin6_addr, text,
                sizeof text);
  }
  return text;
}

std::vector<std::string> addresses_of(const std::string& host) {
  std::vector<std::string> out;
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0) return out;
  for (auto* a = found; a != nullptr; a = a->ai_next) out.push_back(numeric(a->ai_addr));
  ::freeaddrinfo(found);
  return out;
}

std::vector<std::string> interface_addresses() {
  std::vector<std::string> out;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return out;
  for (auto* i = list; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr != nullptr) out.push_back(numeric(i->ifa_addr));
  }
  ::freeifaddrs(list);
  return out;
}

}  // namespace

bool is_this_host_name(const std::string& host, const std::string& host_name) {
  if (is_loopback_address(host)) return true;
  const std::string a = ascii_lower(host), b = ascii_lower(host_name);
  return !a.empty() && (a == b || a == b.substr(0, b.find('.')));
}

bool names_this_machine(const std::string& host, const std::string& host_name,
                        const std::vector<std::string>& resolved,
                        const std::vector<std::string>& local) {
  if (is_this_host_name(host, host_name)) return true;
  return std::ranges::any_of(resolved, [&](const std::string& address) {
    // All of 127/8 is this machine (Debian maps its host name to 127.0.1.1).
    return address.starts_with("127.") || address == "::1" ||
           std::ranges::find(local, address) != local.end();
  });
}

bool this_machine_is(const std::string& host) {
  return names_this_machine(host, this_host_name(), addresses_of(host), interface_addresses());
}

}  // namespace dlaunch
