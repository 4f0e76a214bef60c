// A host's network interfaces as its agent sees them (from getifaddrs and
// /sys/class/net), sent to the coordinator in Join so it can pick node 0's
// address every node reaches and the interface each host's ranks should use.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/network_facts.h"

namespace dlaunch::net {

std::string_view to_string(InterfaceKind kind);

// What /sys/class/net/NAME says about an interface, read by the agent.
struct SysfsFacts {
  std::string name;
  int type = 1;  // ARPHRD_*: 1 ethernet, 32 InfiniBand, 772 loopback, ...
  int ifindex = 0;
  int iflink = 0;               // differs from ifindex for veth (the peer) and stacked links
  bool has_device = false;      // a `device` link: hardware (or virtio) behind it
  std::string devtype;          // DEVTYPE= in uevent: bridge, vlan, bond, vxlan, wireguard...
  bool has_bridge_dir = false;  // `bridge/`: a Linux bridge
  bool has_tun_flags = false;   // `tun_flags`: a TUN/TAP device
  // The kernel driver as ethtool reports it ("veth", "virtio_net", "mlx5_core",
  // "bridge", ...); empty when it cannot be read.
  std::string driver;
};

InterfaceKind classify(const SysfsFacts& facts);

// The interface holding `address` (the source address of a connection, so the
// interface traffic to that peer leaves by); nullopt when none has it.
const NetInterface* interface_with_address(const Interfaces& interfaces, std::string_view address);

// 169.254.0.0/16 and fe80::/10: valid on one link only (IPv6 needs a scope
// id), so never a MASTER_ADDR for other hosts.
bool is_link_local_address(std::string_view address);

}  // namespace dlaunch::net
