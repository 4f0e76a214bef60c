#include <doctest/doctest.h>

#include <random>
#include <set>

#include "launcher/fleet/membership.h"

using namespace dlaunch;

namespace {

std::vector<std::string> host_labels(std::size_t n) {
  std::vector<std::string> labels;
  for (std::size_t i = 0; i < n; ++i) labels.push_back("h" + std::to_string(i));
  return labels;
}

Membership::Round round_of(Result<Membership::Round> r) {
  if (!r) FAIL("no round: " << r.error());
  return std::move(r).value();
}

}  // namespace

TEST_CASE("membership: 3 hosts and a spare; the spare takes the lost node's rank in place") {
  Membership m({{false, false, false, true}, 3, 3, 2});
  const auto labels = host_labels(4);
  const auto first = round_of(m.first_round({true, true, true, true}, labels));
  CHECK(first.roster == std::vector<int>{0, 1, 2});
  CHECK(first.changes.empty());
  CHECK(m.node_rank_of(3) == -1);
  CHECK(m.elastic());

  m.retire(1, "agent lost");
  const auto second = round_of(m.next_round({true, false, true, true}, labels));
  // Nodes 0 and 2 keep their node ranks, so their ranks keep their numbers.
  CHECK(second.roster == std::vector<int>{0, 3, 2});
  REQUIRE(second.changes.size() == 1);
  CHECK(second.changes[0] == "h3 takes node 1 of h1 (agent lost)");
  CHECK(m.node_rank_of(3) == 1);
  CHECK(m.node_rank_of(1) == -1);

  // No spare left: with MIN = MAX = 3 the job cannot go on, and says whom it lost.
  m.retire(0, "link down");
  const auto third = m.next_round({false, true, true, true}, labels);
  REQUIRE_FALSE(third.ok());
  const auto& error = third.error();
  CHECK(error.find("2 nodes are left, fewer than the 3 the job needs") == 0);
  CHECK(error.find("h0 (link down)") != std::string::npos);
  CHECK(error.find("h1 (agent lost)") != std::string::npos);
}

TEST_CASE("membership: MIN:MAX starts with what joined and goes on above MIN") {
  Membership m({{false, false, false}, 2, 3, 2});
  const auto labels = host_labels(3);
  CHECK(round_of(m.first_round({true, false, true}, labels)).roster == std::vector<int>{0, 2});
  CHECK_FALSE(
      Membership({{false, false, false}, 2, 3, 2}).first_round({false, false, true}, labels).ok());
  // Node 0 lost: the rest move up, in host-list order.
  m.retire(0, "lost");
  const auto next = m.next_round({false, true, true}, labels);
  // Host 1 (ready now) fills the place of host 0; the roster stays at 2 nodes.
  CHECK(round_of(next).roster == std::vector<int>{1, 2});
}

TEST_CASE("membership: a node whose ranks fail in --node-fail-limit rounds is retired") {
  Membership m({{false, false, true}, 2, 2, 2});
  const auto labels = host_labels(3);
  round_of(m.first_round({true, true, true}, labels));
  CHECK_FALSE(m.count_failure(1));
  CHECK(round_of(m.next_round({true, true, true}, labels)).roster == std::vector<int>{0, 1});
  CHECK(m.count_failure(1));
  const auto r = round_of(m.next_round({true, true, true}, labels));
  CHECK(r.roster == std::vector<int>{0, 2});
  CHECK(r.changes.at(0) == "h2 takes node 1 of h1 (its ranks failed in 2 rounds)");
  // Back and ready, but retired: never taken again.
  m.retire(0, "lost");
  CHECK_FALSE(m.next_round({true, true, true}, labels).ok());
}

TEST_CASE("membership: random losses and returns keep the roster's invariants") {
  std::mt19937 random(20261126);
  for (int trial = 0; trial < 500; ++trial) {
    const std::size_t hosts = 1 + random() % 12;
    std::vector<bool> spare(hosts);
    for (std::size_t i = 0; i < hosts; ++i) spare[i] = random() % 3 == 0;
    const std::size_t max = 1 + random() % hosts;
    const std::size_t min = 1 + random() % max;
    Membership m({spare, min, max, 1 + static_cast<int>(random() % 3)});
    const auto labels = host_labels(hosts);
    std::vector<bool> ready(hosts);
    for (std::size_t i = 0; i < hosts; ++i) ready[i] = random() % 5 != 0;
    std::set<int> retired;
    auto result = m.first_round(ready, labels);
    for (int round = 0; round < 20; ++round) {
      if (!result) {
        // Only for want of hosts: fewer than MIN could take a place.
        std::size_t could = 0;
        for (std::size_t i = 0; i < hosts; ++i)
          could += ready[i] && !retired.count(static_cast<int>(i)) ? 1 : 0;
        CHECK(could < min);
        CHECK(result.error().find("the") != std::string::npos);
        break;
      }
      const auto& roster = result->roster;
      CHECK(roster.size() >= min);
      CHECK(roster.size() <= max);
      std::set<int> seen;
      for (std::size_t rank = 0; rank < roster.size(); ++rank) {
        const int host = roster[rank];
        CHECK(seen.insert(host).second);  // each host once
        CHECK(ready[static_cast<std::size_t>(host)]);
        CHECK_FALSE(retired.count(host));                       // no retired host reused
        CHECK(m.node_rank_of(host) == static_cast<int>(rank));  // node ranks 0..n-1
      }
      // Hosts come and go; some members are lost or fail.
      for (std::size_t i = 0; i < hosts; ++i) {
        const int host = static_cast<int>(i);
        if (random() % 4 == 0) ready[i] = !ready[i];
        if (m.node_rank_of(host) >= 0 && !ready[i]) retired.insert(host);
        if (m.node_rank_of(host) >= 0 && ready[i] && random() % 6 == 0 && m.count_failure(host))
          retired.insert(host);
      }
      result = m.next_round(ready, labels);
      for (int host : retired) CHECK(m.retired(host));
    }
  }
}
