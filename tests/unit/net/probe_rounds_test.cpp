#include "net/probe_rounds.h"

#include <doctest/doctest.h>

#include <set>

using namespace dlaunch;
using dlaunch::net::ProbeRounds;

namespace {

std::vector<net::ProbeOutcome> outcomes(const std::vector<bool>& reached) {
  std::vector<net::ProbeOutcome> out;
  for (bool r : reached) out.push_back({r, r ? 100 : 0, "eth0", r ? "" : "refused"});
  return out;
}

std::set<std::size_t> nodes_of(const std::vector<ProbeRounds::Request>& requests) {
  std::set<std::size_t> out;
  for (const auto& r : requests) out.insert(r.node);
  return out;
}

// Rounds whose nodes have all joined.
ProbeRounds joined_rounds(std::size_t nodes, std::size_t candidates, std::size_t window) {
  ProbeRounds rounds(nodes, candidates, window);
  for (std::size_t i = 0; i < nodes; ++i) CHECK(rounds.on_joined(i).empty());
  return rounds;
}

}  // namespace

TEST_CASE("a small job: every node tries every candidate, within the window") {
  auto rounds = joined_rounds(10, 3, 12);  // 4 nodes x 3 connections fit
  const auto first = rounds.start();
  CHECK_FALSE(rounds.in_rounds());
  REQUIRE(first.size() == 4);
  CHECK(first[0].candidates == std::vector<std::size_t>{0, 1, 2});
  auto reply = rounds.on_report(2, outcomes({false, true, true}));
  REQUIRE(reply.next.size() == 1);
  CHECK(reply.next[0].node == 4);
  CHECK(rounds.reported(2));
  CHECK_FALSE(rounds.reported(0));
  CHECK(rounds.reports_missing() == 9);
  // The same node again, or one never asked: nothing changes.
  CHECK(rounds.on_report(2, outcomes({true, true, true})).next.empty());
  CHECK(rounds.on_report(9, outcomes({true, true, true})).next.empty());
  CHECK(rounds.reports_missing() == 9);
}

TEST_CASE("a report with the wrong number of outcomes counts as reaching nothing") {
  auto rounds = joined_rounds(2, 2, 100);
  rounds.start();
  CHECK(rounds.on_report(0, outcomes({true, true, true})).malformed);
  rounds.on_report(1, outcomes({true, true}));
  REQUIRE(rounds.complete());
  const auto all = rounds.take_outcomes();
  CHECK_FALSE(all[0][0].reached);
  CHECK_FALSE(all[0][1].reached);
  CHECK(all[1][1].reached);
}

TEST_CASE("a node that reaches nothing is asked once more; a small job keeps its second answer") {
  auto rounds = joined_rounds(2, 2, 100);
  rounds.start();
  auto reply = rounds.on_report(1, outcomes({false, false}));
  CHECK(reply.retrying);
  REQUIRE(reply.next.size() == 1);
  CHECK(reply.next[0].node == 1);
  CHECK(reply.next[0].candidates == std::vector<std::size_t>{0, 1});
  CHECK_FALSE(rounds.reported(1));
  rounds.on_report(0, outcomes({true, true}));
  CHECK_FALSE(rounds.complete());
  reply = rounds.on_report(1, outcomes({false, false}));
  CHECK_FALSE(reply.retrying);
  CHECK_FALSE(reply.reached_nothing.has_value());  // the rule's full table says it
  CHECK(rounds.complete());
}

TEST_CASE("a big job: a scout that reaches nothing twice ends the probe at once, named") {
  auto rounds = joined_rounds(1000, 3, 2048);
  const auto scouts = nodes_of(rounds.start());
  const std::size_t slow = *std::next(scouts.begin(), 5);
  std::size_t asked_again = 0;
  for (auto node : scouts) {
    if (node == slow) continue;
    rounds.on_report(node, outcomes({false, true, true}));
  }
  auto reply = rounds.on_report(slow, outcomes({false, false, false}));
  CHECK(reply.retrying);
  for (const auto& r : reply.next) asked_again += r.node == slow;
  CHECK(asked_again == 1);
  reply = rounds.on_report(slow, outcomes({false, false, false}));
  REQUIRE(reply.reached_nothing == slow);
  CHECK(reply.outcomes.size() == 3);
  CHECK(reply.outcomes[2].error == "refused");
  CHECK(reply.next.empty());  // nobody is sent to every address
  CHECK(rounds.complete());
}

TEST_CASE("a big job: a scout that reaches something on its second try goes on as usual") {
  auto rounds = joined_rounds(300, 2, 2048);
  const auto scouts = nodes_of(rounds.start());
  std::vector<ProbeRounds::Request> confirm;
  for (auto node : scouts) {
    if (node == 0) {
      const auto first = rounds.on_report(0, outcomes({false, false}));  // a lost SYN, say
      CHECK(first.retrying);
      CHECK(rounds.scouts_choice() == std::nullopt);
    }
    auto reply = rounds.on_report(node, outcomes({false, true}));
    CHECK_FALSE(reply.retrying);
    CHECK_FALSE(reply.reached_nothing.has_value());
    confirm.insert(confirm.end(), reply.next.begin(), reply.next.end());
  }
  REQUIRE(rounds.scouts_choice() == std::size_t{1});
  CHECK(confirm.size() == 300 - ProbeRounds::kScouts);
  CHECK_FALSE(rounds.on_report(confirm[0].node, outcomes({true})).fell_back);
}

TEST_CASE("a big job: scouts spread over the list, then one connection per node") {
  auto rounds = joined_rounds(1000, 3, 2048);
  const auto scouts = rounds.start();
  CHECK(rounds.in_rounds());
  const auto scout_nodes = nodes_of(scouts);
  REQUIRE(scout_nodes.size() == ProbeRounds::kScouts);
  CHECK(scout_nodes.count(0) == 1);
  CHECK(scout_nodes.count(999) == 1);
  CHECK(*std::next(scout_nodes.begin()) < 20);  // spread, not the first 64
  std::vector<ProbeRounds::Request> confirm;
  for (auto node : scout_nodes) {
    auto reply = rounds.on_report(node, outcomes({false, true, true}));
    confirm.insert(confirm.end(), reply.next.begin(), reply.next.end());
  }
  REQUIRE(rounds.scouts_choice() == std::size_t{1});
  CHECK(confirm.size() == 1000 - ProbeRounds::kScouts);
  CHECK(confirm[0].candidates == std::vector<std::size_t>{1});
  for (const auto& r : confirm) {
    CHECK_FALSE(rounds.complete());
    rounds.on_report(r.node, outcomes({true}));
  }
  REQUIRE(rounds.complete());
  const auto all = rounds.take_outcomes();
  CHECK(all[5][1].reached);
  CHECK(all[5][0].error == "not tried");
  CHECK(all[5][2].error == "not tried");
}

TEST_CASE("no candidate reached by every scout: everyone tries everything") {
  auto rounds = joined_rounds(300, 2, 2048);
  const auto scout_nodes = nodes_of(rounds.start());
  std::vector<ProbeRounds::Request> next;
  bool fell_back = false;
  for (auto node : scout_nodes) {
    auto reply = rounds.on_report(node, outcomes({node != 0, node == 0}));
    fell_back = fell_back || reply.fell_back;
    next.insert(next.end(), reply.next.begin(), reply.next.end());
  }
  CHECK(fell_back);
  CHECK_FALSE(rounds.scouts_choice().has_value());
  REQUIRE(next.size() == 300 - ProbeRounds::kScouts);
  CHECK(next[0].candidates == std::vector<std::size_t>{0, 1});
  for (const auto& r : next) rounds.on_report(r.node, outcomes({true, true}));
  CHECK(rounds.complete());
}

TEST_CASE("a fallback keeps the window: confirmations still out hold their connections") {
  auto rounds = joined_rounds(400, 2, 200);
  auto pending = rounds.start();
  std::vector<ProbeRounds::Request> confirm;
  for (std::size_t i = 0; i < pending.size(); ++i) {
    auto reply = rounds.on_report(pending[i].node, outcomes({true, true}));
    confirm.insert(confirm.end(), reply.next.begin(), reply.next.end());
  }
  // 64 scouts x 2 connections fit the window of 200 at once.
  REQUIRE(rounds.scouts_choice() == std::size_t{0});
  REQUIRE(confirm.size() == 200);
  auto reply = rounds.on_report(confirm[0].node, outcomes({false}));
  CHECK(reply.fell_back);
  // 199 confirmations are still out; no room for a request of 2 until some answer.
  CHECK(reply.next.empty());
  const auto late = rounds.on_report(confirm[1].node, outcomes({true}));
  REQUIRE(late.next.size() == 1);
  CHECK(late.next[0].candidates.size() == 2);
  CHECK_FALSE(rounds.reported(confirm[1].node));  // its first-round answer no longer counts
}

TEST_CASE("a node is asked once it has joined; the stage waits for it like any other") {
  ProbeRounds rounds(300, 2, 2048);
  for (std::size_t i = 0; i < 300; ++i)
    if (i != 299) rounds.on_joined(i);
  // The scouts that have joined go at once; the last node, a scout, has not joined.
  const auto scouts = rounds.start();
  CHECK(scouts.size() == ProbeRounds::kScouts - 1);
  CHECK(nodes_of(scouts).count(299) == 0);
  for (const auto& r : scouts)
    CHECK(rounds.on_report(r.node, outcomes({false, true})).next.empty());
  CHECK_FALSE(rounds.scouts_choice().has_value());
  // It joins: asked every candidate at once, and its report lets the others go.
  const auto late = rounds.on_joined(299);
  REQUIRE(late.size() == 1);
  CHECK(late[0].node == 299);
  CHECK(late[0].candidates == std::vector<std::size_t>{0, 1});
  CHECK(rounds.on_joined(299).empty());  // joining twice asks nothing more
  const auto confirm = rounds.on_report(299, outcomes({false, true})).next;
  CHECK(rounds.scouts_choice() == 1);
  CHECK(confirm.size() == 300 - ProbeRounds::kScouts);
  for (const auto& r : confirm) {
    CHECK(r.candidates == std::vector<std::size_t>{1});
    rounds.on_report(r.node, outcomes({true}));
  }
  CHECK(rounds.complete());
}

TEST_CASE("a small job completes only once the last node has joined and reported") {
  ProbeRounds rounds(3, 2, 100);
  rounds.on_joined(0);
  CHECK(rounds.start().size() == 1);
  rounds.on_report(0, outcomes({true, true}));
  CHECK_FALSE(rounds.complete());
  CHECK(rounds.on_joined(2).size() == 1);
  rounds.on_report(2, outcomes({true, true}));
  CHECK_FALSE(rounds.complete());
  CHECK(rounds.reports_missing() == 1);
  CHECK(rounds.on_joined(1).size() == 1);
  rounds.on_report(1, outcomes({true, false}));
  CHECK(rounds.complete());
}

TEST_CASE("a node that misses the scouts' choice tries everything first; nothing twice ends it") {
  // One node whose SYNs are all lost: before, its own requests waited behind
  // every other node's fallback (at 20,000 nodes and 8 addresses, 170,000
  // connections before the job failed).
  auto rounds = joined_rounds(1000, 3, 2048);
  for (auto node : nodes_of(rounds.start())) {
    CHECK(rounds.on_report(node, outcomes({true, true, true})).next.size() <= 1000);
  }
  REQUIRE(rounds.scouts_choice() == std::size_t{0});
  const std::size_t missed = 500;
  auto reply = rounds.on_report(missed, outcomes({false}));
  CHECK(reply.fell_back);
  REQUIRE_FALSE(reply.next.empty());
  CHECK(reply.next.front().node == missed);
  CHECK(reply.next.front().candidates.size() == 3);
  reply = rounds.on_report(missed, outcomes({false, false, false}));
  CHECK(reply.retrying);
  REQUIRE_FALSE(reply.next.empty());
  CHECK(reply.next.front().node == missed);
  reply = rounds.on_report(missed, outcomes({false, false, false}));
  CHECK(reply.reached_nothing == missed);
  CHECK(rounds.complete());
}

TEST_CASE(
    "a node lost before the probe is never asked; one lost while asked is waited for no more") {
  auto rounds = joined_rounds(4, 2, 100);
  rounds.on_lost(1);
  const auto first = rounds.start();
  CHECK(nodes_of(first) == std::set<std::size_t>{0, 2, 3});
  rounds.on_report(0, outcomes({true, true}));
  rounds.on_report(2, outcomes({true, false}));
  CHECK_FALSE(rounds.complete());
  // Node 3's connections are released and the probe ends without it.
  const auto reply = rounds.on_lost(3);
  CHECK(reply.next.empty());
  REQUIRE(rounds.complete());
  const auto all = rounds.take_outcomes();
  CHECK(all[1][0].error == "lost");
  CHECK(all[3][1].error == "lost");
  CHECK(all[2][0].reached);
}

TEST_CASE("a big job: a lost scout does not hold the scouts' stage, nor its choice") {
  const std::size_t n = 1000;
  auto rounds = joined_rounds(n, 2, 100000);
  const auto scouts = rounds.start();
  REQUIRE(rounds.in_rounds());
  REQUIRE(scouts.size() == ProbeRounds::kScouts);
  // Every scout but the last reaches candidate 1 only; the last is lost.
  std::vector<ProbeRounds::Request> next;
  for (std::size_t i = 0; i + 1 < scouts.size(); ++i) {
    auto reply = rounds.on_report(scouts[i].node, outcomes({false, true}));
    CHECK_FALSE(reply.fell_back);
    next.insert(next.end(), reply.next.begin(), reply.next.end());
  }
  CHECK(next.empty());
  next = rounds.on_lost(scouts.back().node).next;
  REQUIRE(rounds.scouts_choice() == std::size_t{1});
  // The others try the scouts' choice alone; the lost scout is not asked.
  CHECK(next.size() == n - ProbeRounds::kScouts);
  for (const auto& r : next) {
    CHECK(r.candidates == std::vector<std::size_t>{1});
    CHECK(r.node != scouts.back().node);
  }
}

TEST_CASE("a node lost while others wait for the window lets the next one go") {
  auto rounds = joined_rounds(3, 2, 2);  // one node's two connections at a time
  const auto first = rounds.start();
  REQUIRE(nodes_of(first) == std::set<std::size_t>{0});
  const auto reply = rounds.on_lost(0);
  CHECK(nodes_of(reply.next) == std::set<std::size_t>{1});
  CHECK(rounds.reports_missing() == 2);
}
