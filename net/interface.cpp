#include "net/interface.h"

#include <arpa/inet.h>

namespace dlaunch::net {

std::string_view to_string(InterfaceKind kind) {
  switch (kind) {
    case InterfaceKind::physical:
      return "physical";
    case InterfaceKind::infiniband:
      return "infiniband";
    case InterfaceKind::bond:
      return "bond";
    case InterfaceKind::vlan:
      return "vlan";
    case InterfaceKind::veth:
      return "veth";
    case InterfaceKind::tunnel:
      return "tunnel";
    case InterfaceKind::bridge:
      return "bridge";
    case InterfaceKind::virtual_:
      return "virtual";
    case InterfaceKind::loopback:
      return "loopback";
    case InterfaceKind::other:
      return "other";
  }
  return "other";
}

namespace {

bool starts_with_any(std::string_view name, std::initializer_list<std::string_view> prefixes) {
  for (auto p : prefixes) {
    if (name.starts_with(p)) return true;
  }
  return false;
}

}  // namespace

InterfaceKind classify(const SysfsFacts& f) {
  constexpr int kLoopback = 772, kInfiniband = 32, kNone = 65534;
  constexpr int kTunnelTypes[] = {768, 769, 776, 778, 823};  // ipip, ip6ip6, sit, gre, ip6gre
  if (f.type == kLoopback) return InterfaceKind::loopback;
  if (f.type == kInfiniband) return InterfaceKind::infiniband;
  for (int t : kTunnelTypes) {
    if (f.type == t) return InterfaceKind::tunnel;
  }
  // Container and VM plumbing, whatever its driver: never the path between hosts.
  if (starts_with_any(f.name, {"docker", "virbr", "cni", "flannel", "cali", "br-", "podman",
                               "lxcbr", "lxdbr", "vnet", "kube-"})) {
    return InterfaceKind::virtual_;
  }
  if (f.has_tun_flags || f.type == kNone || f.devtype == "vxlan" || f.devtype == "geneve" ||
      f.devtype == "wireguard" || f.devtype == "gretap" || f.devtype == "ip6gretap") {
    return InterfaceKind::tunnel;
  }
  if (f.has_bridge_dir || f.devtype == "bridge") return InterfaceKind::bridge;
  if (f.devtype == "bond" || f.devtype == "team") return InterfaceKind::bond;
  if (f.devtype == "vlan") return InterfaceKind::vlan;
  if (f.has_device) return InterfaceKind::physical;
  // The driver says it when it can be read. Without it, a veth's iflink is its
  // peer's index, but in the peer's namespace, where it may be the same number
  // as this end's own: a guess that misses some veths.
  if (f.driver == "veth") return InterfaceKind::veth;
  if (!f.driver.empty() && f.type == 1 && f.devtype.empty()) return InterfaceKind::virtual_;
  if (f.type == 1 && f.iflink != f.ifindex && f.devtype.empty()) return InterfaceKind::veth;
  return InterfaceKind::virtual_;
}

const NetInterface* interface_with_address(const Interfaces& interfaces, std::string_view address) {
  // An IPv4 peer reached over a dual-stack socket reports "::ffff:a.b.c.d".
  if (address.starts_with("::ffff:") && address.find('.') != std::string_view::npos)
    address.remove_prefix(7);
  for (const auto& i : interfaces) {
    for (const auto& a : i.addresses) {
      if (a.address == address) return &i;
    }
  }
  return nullptr;
}

bool is_link_local_address(std::string_view address) {
  const std::string text(address);
  in_addr v4{};
  if (::inet_pton(AF_INET, text.c_str(), &v4) == 1) {
    const auto* b = reinterpret_cast<const unsigned char*>(&v4.s_addr);
    return b[0] == 169 && b[1] == 254;
  }
  in6_addr v6{};
  if (::inet_pton(AF_INET6, text.c_str(), &v6) == 1) {
    return v6.s6_addr[0] == 0xfe && (v6.s6_addr[1] & 0xc0) == 0x80;
  }
  return false;
}

}  // namespace dlaunch::net
