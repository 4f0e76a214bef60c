#include "launcher/transport/agent_address.h"

#include <netdb.h>
#include <sys/socket.h>

#include <map>
#include <memory>
#include <mutex>

#include "common/host_lookup.h"

namespace dlaunch {

namespace {

std::string resolve(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0 || found == nullptr) return host;
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> owner(found, ::freeaddrinfo);
  std::string first;
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
    char text[NI_MAXHOST];
    if (::getnameinfo(a->ai_addr, a->ai_addrlen, text, sizeof text, nullptr, 0, NI_NUMERICHOST) !=
        0)
      continue;
    if (a->ai_family == AF_INET) return text;
    if (first.empty()) first = text;
  }
  return first.empty() ? host : first;
}

}  // namespace

std::string address_for_agents(const std::string& host) {
  if (host.empty() || is_numeric_address(host)) return host;
  // Once per name: a probe goes to every node of a large job.
  static std::mutex mutex;
  static std::map<std::string, std::string> resolved;
  std::lock_guard lock(mutex);
  auto [it, inserted] = resolved.try_emplace(host);
  if (inserted) it->second = resolve(host);
  return it->second;
}

}  // namespace dlaunch
