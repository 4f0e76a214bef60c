#include <doctest/doctest.h>

#include <algorithm>

#include "net/choice.h"

using namespace dlaunch::net;

namespace {

ProbeOutcome ok(std::string itf, std::int32_t us = 300) {
  return {true, us, std::move(itf), ""};
}
ProbeOutcome no(std::string why = "timed out") {
  return {false, 0, "", std::move(why)};
}

// Node 0 listed by a management address only the coordinator reaches; nodes
// in another region reach its region address through a tunnel.
struct CrossRegion {
  CandidateSources sources;
  std::vector<Candidate> candidates;
  std::vector<NodeProbe> nodes;

  explicit CrossRegion(int n) {
    sources.node0_address = "198.19.0.2";
    sources.node0_interfaces = {
        {"mgmt0", InterfaceKind::veth, 1500, true, {{"198.19.0.2", 30, false}}},
        {"ens5", InterfaceKind::physical, 1500, true, {{"198.18.1.10", 24, false}}}};
    candidates = master_candidates(sources);
    REQUIRE(candidates.size() == 2);
    nodes.push_back({"h0", sources.node0_interfaces, {ok("mgmt0"), ok("ens5")}, true});
    for (int i = 1; i < n; ++i) {
      const std::string itf = "eth" + std::to_string(i % 7);
      nodes.push_back({"h" + std::to_string(i),
                       {{itf, InterfaceKind::veth, 1500, true, {{"198.18.2.1", 24, false}}}},
                       {no("unreachable"), ok(itf)},
                       true});
    }
  }
};

}  // namespace

TEST_CASE("the first candidate every node reached wins, with each node's interface") {
  CrossRegion job(3);
  const auto r = choose_master(job.candidates, job.sources, job.nodes);
  REQUIRE(r.choice.has_value());
  CHECK(r.choice->address == "198.18.1.10");
  CHECK(r.choice->candidate == 1);
  CHECK(r.choice->interface_by_node == std::vector<std::string>{"ens5", "eth1", "eth2"});
  CHECK(r.choice->warnings.empty());
  CHECK(r.report.find("MASTER_ADDR 198.18.1.10") != std::string::npos);
  CHECK(r.report.find("reached by 1/3 nodes") != std::string::npos);  // the management address
  CHECK(r.report.find("not reached from h1 (unreachable), h2 (unreachable)") != std::string::npos);
}

TEST_CASE("no candidate reached by all: the table names the hosts and the addresses") {
  CrossRegion job(3);
  job.nodes[2].outcomes[1] = no("refused");
  const auto r = choose_master(job.candidates, job.sources, job.nodes);
  CHECK_FALSE(r.choice.has_value());
  CHECK(r.report.find("no address of node 0 (h0) was reached by every node") != std::string::npos);
  CHECK(r.report.find("198.18.1.10, node 0's interface ens5 (physical): reached by 2/3 nodes") !=
        std::string::npos);
  CHECK(r.report.find("not reached from h2 (refused)") != std::string::npos);
  // Rows only for nodes that missed something: h0 reached both.
  CHECK(r.report.find("\n  0 ") == std::string::npos);
  CHECK(r.report.find("  2     h2    unreachable  refused") != std::string::npos);
  CHECK(r.report.find("master_address") != std::string::npos);
}

TEST_CASE("a node that sent no report, or a short one, reached nothing") {
  CrossRegion job(2);
  job.nodes[1].answered = false;
  auto r = choose_master(job.candidates, job.sources, job.nodes);
  CHECK_FALSE(r.choice.has_value());
  CHECK(r.report.find("no answer") != std::string::npos);
  job.nodes[1].answered = true;
  job.nodes[1].outcomes.pop_back();
  r = choose_master(job.candidates, job.sources, job.nodes);
  CHECK_FALSE(r.choice.has_value());
}

TEST_CASE("10,000 nodes: the report stays short") {
  CrossRegion job(10'000);
  for (int i = 5000; i < 10'000; ++i) job.nodes[static_cast<std::size_t>(i)].outcomes[1] = no();
  const auto r = choose_master(job.candidates, job.sources, job.nodes);
  CHECK_FALSE(r.choice.has_value());
  CHECK(r.report.find("and 9979 more nodes that missed a candidate") != std::string::npos);
  CHECK(std::count(r.report.begin(), r.report.end(), '\n') < 40);
}

TEST_CASE("routes over a small-MTU tunnel, a container bridge or loopback are warned about") {
  CrossRegion job(4);
  job.nodes[1].interfaces[0].kind = InterfaceKind::tunnel;
  job.nodes[1].interfaces[0].mtu = 1450;
  job.nodes[2].interfaces[0].kind = InterfaceKind::virtual_;
  job.nodes[3].interfaces[0].kind = InterfaceKind::loopback;
  const auto r = choose_master(job.candidates, job.sources, job.nodes);
  REQUIRE(r.choice.has_value());
  REQUIRE(r.choice->warnings.size() == 3);
  CHECK(r.choice->warnings[0].find("host h1") != std::string::npos);
  CHECK(r.choice->warnings[0].find("MTU 1450") != std::string::npos);
  CHECK(r.choice->warnings[0].find("NCCL_") != std::string::npos);
  CHECK(r.choice->warnings[1].find("host h2") != std::string::npos);
  CHECK(r.choice->warnings[2].find("loopback") != std::string::npos);
}

TEST_CASE("every node on loopback (one machine) is not warned about") {
  CandidateSources s;
  s.configured = "127.0.0.1";
  const Interfaces lo{{"lo", InterfaceKind::loopback, 65536, true, {{"127.0.0.1", 8, false}}}};
  const auto cs = master_candidates(s);
  std::vector<NodeProbe> nodes{{"a", lo, {ok("lo")}, true}, {"b", lo, {ok("lo")}, true}};
  const auto r = choose_master(cs, s, nodes);
  REQUIRE(r.choice.has_value());
  CHECK(r.choice->warnings.empty());
}

TEST_CASE("a report without one outcome per candidate counts as no answer") {
  CHECK_FALSE(node_probe("h", {}, std::nullopt, 2).answered);
  CHECK_FALSE(node_probe("h", {}, std::vector<ProbeOutcome>{ok("eth0")}, 2).answered);
  const auto p = node_probe("h", {}, std::vector<ProbeOutcome>{ok("eth0"), no()}, 2);
  CHECK(p.answered);
  CHECK(p.outcomes.size() == 2);
  CHECK(p.label == "h");
}
