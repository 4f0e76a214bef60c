#include <doctest/doctest.h>

#include "net/interface.h"

using namespace dlaunch::net;

namespace {

SysfsFacts facts(std::string name, int type = 1) {
  SysfsFacts f;
  f.name = std::move(name);
  f.type = type;
  f.ifindex = 5;
  f.iflink = 5;
  return f;
}

}  // namespace

TEST_CASE("interfaces are classified from what /sys/class/net says") {
  CHECK(classify(facts("lo", 772)) == InterfaceKind::loopback);
  CHECK(classify(facts("ib0", 32)) == InterfaceKind::infiniband);
  CHECK(classify(facts("gre1", 778)) == InterfaceKind::tunnel);
  auto nic = facts("enp3s0");
  nic.has_device = true;
  CHECK(classify(nic) == InterfaceKind::physical);
  auto docker = facts("docker0");
  docker.devtype = "bridge";
  docker.has_bridge_dir = true;
  CHECK(classify(docker) == InterfaceKind::virtual_);  // a bridge, but a container's
  auto br = facts("br0");
  br.has_bridge_dir = true;
  CHECK(classify(br) == InterfaceKind::bridge);
  auto vx = facts("vx0");
  vx.devtype = "vxlan";
  CHECK(classify(vx) == InterfaceKind::tunnel);
  auto wg = facts("wg0", 65534);
  CHECK(classify(wg) == InterfaceKind::tunnel);
  auto tun = facts("tun0", 65534);
  tun.has_tun_flags = true;
  CHECK(classify(tun) == InterfaceKind::tunnel);
  auto veth = facts("eth7");  // a renamed veth in a container
  veth.iflink = 9;
  CHECK(classify(veth) == InterfaceKind::veth);
  auto vlan = facts("eth0.100");
  vlan.devtype = "vlan";
  vlan.iflink = 2;
  CHECK(classify(vlan) == InterfaceKind::vlan);
  CHECK(classify(facts("dummy0")) == InterfaceKind::virtual_);
}

TEST_CASE("a veth is told by its driver, whatever its peer's index") {
  // The peer's index lives in the other namespace and may equal this end's.
  auto same_index = facts("enp3s0");
  same_index.driver = "veth";
  CHECK(classify(same_index) == InterfaceKind::veth);
  auto dummy = facts("eth9");
  dummy.iflink = 9;
  dummy.driver = "dummy";
  CHECK(classify(dummy) == InterfaceKind::virtual_);
  auto nic = facts("ens5");
  nic.has_device = true;
  nic.driver = "virtio_net";
  CHECK(classify(nic) == InterfaceKind::physical);
}

TEST_CASE("the interface holding a connection's source address is found") {
  const Interfaces itfs{{"lo", InterfaceKind::loopback, 65536, true, {{"127.0.0.1", 8, false}}},
                        {"ens5",
                         InterfaceKind::physical,
                         1500,
                         true,
                         {{"198.18.1.10", 24, false}, {"2001:db8::10", 64, true}}}};
  CHECK(interface_with_address(itfs, "198.18.1.10")->name == "ens5");
  CHECK(interface_with_address(itfs, "::ffff:198.18.1.10")->name == "ens5");
  CHECK(interface_with_address(itfs, "2001:db8::10")->name == "ens5");
  CHECK(interface_with_address(itfs, "127.0.0.1")->name == "lo");
  CHECK(interface_with_address(itfs, "10.9.9.9") == nullptr);
}

TEST_CASE("link-local addresses are recognised") {
  CHECK(is_link_local_address("169.254.3.4"));
  CHECK(is_link_local_address("fe80::1"));
  CHECK_FALSE(is_link_local_address("198.18.1.10"));
  CHECK_FALSE(is_link_local_address("2001:db8::1"));
  CHECK_FALSE(is_link_local_address("gpu01"));
}
