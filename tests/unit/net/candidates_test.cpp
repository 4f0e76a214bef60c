#include <doctest/doctest.h>

#include <algorithm>

#include "net/candidates.h"

using namespace dlaunch::net;

namespace {

std::vector<std::string> addresses(const std::vector<Candidate>& cs) {
  std::vector<std::string> out;
  for (const auto& c : cs) out.push_back(c.address);
  return out;
}

Interfaces node0_interfaces() {
  return {
      {"docker0", InterfaceKind::virtual_, 1500, true, {{"172.17.0.1", 16, false}}},
      {"lo", InterfaceKind::loopback, 65536, true, {{"127.0.0.1", 8, false}, {"::1", 128, true}}},
      {"ens5",
       InterfaceKind::physical,
       1500,
       true,
       {{"fe80::1", 64, true}, {"2001:db8::10", 64, true}, {"198.18.1.10", 24, false}}},
      {"vx0", InterfaceKind::tunnel, 1450, true, {{"198.18.200.1", 30, false}}},
      {"ens6", InterfaceKind::physical, 1500, false, {{"198.18.9.9", 24, false}}},  // down
      {"eth9", InterfaceKind::veth, 1500, true, {{"169.254.7.7", 16, false}}},
  };
}

}  // namespace

TEST_CASE("candidates: configured, hosts-file address, then node 0's interfaces best first") {
  CandidateSources s;
  s.configured = "198.18.1.10";
  s.configured_by = "--master-addr";
  s.node0_address = "10.0.0.5";
  s.node0_interfaces = node0_interfaces();
  const auto cs = master_candidates(s);
  // The configured address is not repeated where ens5 lists it; no loopback,
  // link-local or down interfaces; IPv4 before IPv6; docker last.
  CHECK(addresses(cs) == std::vector<std::string>{"198.18.1.10", "10.0.0.5", "2001:db8::10",
                                                  "198.18.200.1", "172.17.0.1"});
  CHECK(cs[0].source == CandidateSource::configured);
  CHECK(cs[1].source == CandidateSource::hosts_file);
  CHECK(describe(cs[0], s) == "--master-addr");
  CHECK(describe(cs[1], s) == "node 0's address in the hosts file");
  CHECK(describe(cs[2], s) == "node 0's interface ens5 (physical)");
  CHECK(describe(cs[4], s) == "node 0's interface docker0 (virtual)");
}

TEST_CASE("candidates: loopback only when every node is this machine") {
  CandidateSources s;
  s.node0_address = "localhost";
  s.node0_interfaces = node0_interfaces();
  auto cs = addresses(master_candidates(s));
  CHECK(std::find(cs.begin(), cs.end(), "localhost") == cs.end());
  CHECK(std::find(cs.begin(), cs.end(), "127.0.0.1") == cs.end());
  s.all_nodes_local = true;
  cs = addresses(master_candidates(s));
  CHECK(cs.front() == "localhost");
  CHECK(std::find(cs.begin(), cs.end(), "127.0.0.1") != cs.end());
  CHECK(cs.back() == "::1");  // loopback after every other kind
}

TEST_CASE("candidates: at most kMaxCandidates, the best ones") {
  CandidateSources s;
  s.node0_address = "gpu0";
  NetInterface many{"ens5", InterfaceKind::physical, 1500, true, {}};
  for (int i = 0; i < 40; ++i) many.addresses.push_back({"10.1.0." + std::to_string(i), 24, false});
  s.node0_interfaces = {
      {"docker0", InterfaceKind::virtual_, 1500, true, {{"172.17.0.1", 16, false}}}, many};
  const auto cs = master_candidates(s);
  CHECK(cs.size() == kMaxCandidates);
  CHECK(cs.front().address == "gpu0");
  CHECK(cs.back().address == "10.1.0.14");
}
