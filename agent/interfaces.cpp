#include "agent/interfaces.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>

#include "protocol/messages.h"

namespace dlaunch {
namespace {

std::string read_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

int read_int(const std::string& path, int fallback) {
  try {
    return std::stoi(read_line(path));
  } catch (...) {
    return fallback;
  }
}

bool exists(const std::string& path) {
  return ::access(path.c_str(), F_OK) == 0;
}

// The interface's driver from ethtool's driver info (as `ethtool -i` shows
// it); empty when the ioctl is refused.
std::string driver_of(const std::string& name) {
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return {};
  ethtool_drvinfo info{};
  info.cmd = ETHTOOL_GDRVINFO;
  ifreq request{};
  std::snprintf(request.ifr_name, sizeof request.ifr_name, "%s", name.c_str());
  request.ifr_data = reinterpret_cast<char*>(&info);
  const bool ok = ::ioctl(fd, SIOCETHTOOL, &request) == 0;
  ::close(fd);
  if (!ok) return {};
  return std::string(info.driver, ::strnlen(info.driver, sizeof info.driver));
}

net::SysfsFacts sysfs_facts(const std::string& name) {
  const std::string dir = "/sys/class/net/" + name + "/";
  net::SysfsFacts f;
  f.name = name;
  f.type = read_int(dir + "type", 1);
  f.ifindex = read_int(dir + "ifindex", 0);
  f.iflink = read_int(dir + "iflink", f.ifindex);
  f.has_device = exists(dir + "device");
  f.has_bridge_dir = exists(dir + "bridge");
  f.has_tun_flags = exists(dir + "tun_flags");
  f.driver = driver_of(name);
  std::ifstream uevent(dir + "uevent");
  for (std::string line; std::getline(uevent, line);) {
    if (line.starts_with("DEVTYPE=")) f.devtype = line.substr(8);
  }
  return f;
}

std::uint8_t prefix_length(const sockaddr* mask) {
  if (mask == nullptr) return 0;
  const unsigned char* bytes = nullptr;
  std::size_t size = 0;
  if (mask->sa_family == AF_INET) {
    bytes = reinterpret_cast<const unsigned char*>(
        &reinterpret_cast<const sockaddr_in*>(mask)->sin_addr);
    size = 4;
  } else if (mask->sa_family == AF_INET6) {
    bytes = reinterpret_cast<const sockaddr_in6*>(mask)->sin6_addr.s6_addr;
    size = 16;
  }
  std::uint8_t bits = 0;
  for (std::size_t i = 0; i < size; ++i)
    bits += static_cast<std::uint8_t>(__builtin_popcount(bytes[i]));
  return bits;
}

}  // namespace

net::Interfaces list_interfaces() {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return {};
  std::map<std::string, net::NetInterface> by_name;
  for (ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
    if (a->ifa_name == nullptr) continue;
    auto& itf = by_name[a->ifa_name];
    if (itf.name.empty()) {
      itf.name = a->ifa_name;
      itf.up = (a->ifa_flags & IFF_UP) != 0 && (a->ifa_flags & IFF_RUNNING) != 0;
    }
    if (a->ifa_addr == nullptr) continue;
    const int family = a->ifa_addr->sa_family;
    if (family != AF_INET && family != AF_INET6) continue;
    char text[INET6_ADDRSTRLEN] = {};
    const void* raw =
        family == AF_INET
            ? static_cast<const void*>(&reinterpret_cast<const sockaddr_in*>(a->ifa_addr)->sin_addr)
            : static_cast<const void*>(
                  &reinterpret_cast<const sockaddr_in6*>(a->ifa_addr)->sin6_addr);
    if (::inet_ntop(family, raw, text, sizeof text) == nullptr) continue;
    if (itf.addresses.size() < proto::kMaxAddressesPerInterface)
      itf.addresses.push_back({text, prefix_length(a->ifa_netmask), family == AF_INET6});
  }
  ::freeifaddrs(list);

  net::Interfaces out;
  for (auto& [name, itf] : by_name) {
    if (name.size() > proto::kMaxInterfaceName) continue;
    itf.kind = net::classify(sysfs_facts(name));
    itf.mtu = read_int("/sys/class/net/" + name + "/mtu", 0);
    out.push_back(std::move(itf));
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& x, const auto& y) {
    const bool xa = !x.addresses.empty(), ya = !y.addresses.empty();
    if (xa != ya) return xa;  // interfaces with an address first
    return x.kind < y.kind;
  });
  if (out.size() > proto::kMaxInterfaces) out.resize(proto::kMaxInterfaces);
  return out;
}

}  // namespace dlaunch
