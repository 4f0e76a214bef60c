// What agents report about the network, as plain data carried by the
// rendezvous messages: a host's interfaces (Join) and its probe of node 0's
// candidate addresses (ProbeReport). The reasoning over them (classifying
// interfaces, choosing MASTER_ADDR) is net/'s; the types are named in its
// namespace because that is where they are used most.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace dlaunch::net {

// Ordered as the coordinator prefers them for MASTER_ADDR: the real NICs of a
// host first, container and VM bridges last.
enum class InterfaceKind : std::uint8_t {
  physical = 0,    // has a device behind it (PCI NIC, virtio in a VM)
  infiniband = 1,  // IPoIB
  bond = 2,        // bonding/team of physical NICs
  vlan = 3,
  veth = 4,      // one end of a veth pair: a container's or namespace's main NIC
  tunnel = 5,    // GRE, IPIP, VXLAN, WireGuard, TUN: usually a smaller MTU
  bridge = 6,    // a Linux bridge (br0); its address is the host's when it enslaves the NIC
  virtual_ = 7,  // docker0, virbr0, cni0, other software-only interfaces
  loopback = 8,
  other = 9,
};

struct InterfaceAddress {
  std::string address;  // numeric, no scope suffix
  std::uint8_t prefix = 0;
  bool ipv6 = false;
};

struct NetInterface {
  std::string name;
  InterfaceKind kind = InterfaceKind::other;
  std::int32_t mtu = 0;
  bool up = false;
  std::vector<InterfaceAddress> addresses;
};

using Interfaces = std::vector<NetInterface>;

// A Probe carries at most this many candidate addresses: a host with more
// lists its best ones (net/candidates.h), and the message stays small.
inline constexpr std::size_t kMaxCandidates = 16;

// One agent's attempt at one candidate: a TCP connect to node 0's probe port.
struct ProbeOutcome {
  bool reached = false;
  std::int32_t rtt_us = 0;  // connect time when reached
  std::string
      interface;  // this host's interface the connection left by (by the route when not reached)
  std::string error;  // why not, when not reached ("timed out", "refused")
};

}  // namespace dlaunch::net
