#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <set>

#include "rendezvous/state.h"

using namespace dlaunch;

namespace {
proto::Join join_as(int node, int nproc, int port = 30000) {
  proto::Join j;
  j.node_rank = node;
  j.nproc = nproc;
  j.host = "host" + std::to_string(node);
  j.master_port = port + node;
  return j;
}
}  // namespace

TEST_CASE("1,000 agents joining in random order with uneven slots get contiguous ranks") {
  constexpr int kNodes = 1000;
  RendezvousState state({kNodes, "job", 0, "10.0.0.1", 0, {}});
  std::vector<int> order(kNodes);
  for (int i = 0; i < kNodes; ++i) order[i] = i;
  std::mt19937 rng(7);
  std::shuffle(order.begin(), order.end(), rng);
  auto slots = [](int node) { return 1 + node % 8; };
  std::vector<Outbound> out;
  for (int i = 0; i < kNodes; ++i) {
    const int node = order[i];
    auto o = state.on_join(static_cast<ConnId>(node + 100), join_as(node, slots(node)));
    if (i + 1 < kNodes) {
      CHECK(o.empty());
    } else {
      out = o;
    }
  }
  REQUIRE(out.size() == kNodes);
  REQUIRE(state.assigned());
  int expected_world = 0;
  for (int n = 0; n < kNodes; ++n) expected_world += slots(n);
  CHECK(state.world_size() == expected_world);

  std::vector<int> seen(expected_world, 0);
  for (const auto& o : out) {
    const auto& a = std::get<proto::Assign>(o.message);
    CHECK(o.to == static_cast<ConnId>(a.node_rank + 100));
    CHECK(a.local_world_size == slots(a.node_rank));
    CHECK(a.world_size == expected_world);
    CHECK(a.master_addr == "10.0.0.1");
    CHECK(a.master_port == 30000);  // node 0's free port
    CHECK(a.nnodes == kNodes);
    for (int r = a.rank_offset; r < a.rank_offset + a.local_world_size; ++r) ++seen[r];
    // contiguous in node-rank order
    if (a.node_rank > 0) {
      const auto* prev = state.member_of_rank(a.rank_offset - 1);
      REQUIRE(prev != nullptr);
      CHECK(prev->index == a.node_rank - 1);
    }
  }
  CHECK(std::all_of(seen.begin(), seen.end(), [](int c) { return c == 1; }));
  CHECK(state.owns_rank(100, 0));
  CHECK_FALSE(state.owns_rank(101, 0));
  CHECK(state.member_of_rank(expected_world) == nullptr);
}

TEST_CASE("duplicate, out-of-range and misnamed node ranks are refused") {
  RendezvousState state({2, "job", 0, "a", 0, {"host0", "host1"}});
  auto r = state.on_join(1, join_as(5, 1));
  REQUIRE(r.size() == 1);
  CHECK(std::holds_alternative<proto::Reject>(r[0].message));
  CHECK(state.on_join(1, join_as(0, 1)).empty());
  r = state.on_join(2, join_as(0, 1));
  REQUIRE(r.size() == 1);
  CHECK(std::get<proto::Reject>(r[0].message).reason.find("already taken by host host0") !=
        std::string::npos);
  auto wrong = join_as(1, 1);
  wrong.host = "intruder";
  r = state.on_join(3, wrong);
  REQUIRE(r.size() == 1);
  CHECK(std::get<proto::Reject>(r[0].message).reason.find("belongs to host host1") !=
        std::string::npos);
  CHECK(state.on_join(4, join_as(1, 2)).size() == 2);
  CHECK(state.world_size() == 3);
}

TEST_CASE("a Join claiming too many ranks, or a host name that is no text, is refused why") {
  auto reason = [](const std::vector<Outbound>& out) {
    REQUIRE(out.size() == 1);
    return std::get<proto::Reject>(out[0].message).reason;
  };
  RendezvousState state({4098, "job", 0, "a", 0, {}});
  // 2^31-1 ranks once made world_size negative in the Assign.
  CHECK(reason(state.on_join(1, join_as(0, 2147483647))) ==
        "host0 asked for 2147483647 ranks; a node runs at most 4096");
  auto odd = join_as(0, 1);
  odd.host = "evil\x1b]0;owned\x07\xff";
  CHECK(reason(state.on_join(2, odd)) ==
        R"(host name "evil\x1b]0;owned\x07\xff" is not printable UTF-8 text)");
  CHECK(state.joined() == 0);
  // Up to the whole job's limit: 4096 nodes of 4096 ranks fill 2^24.
  for (int node = 0; node < 4096; ++node)
    REQUIRE(state.on_join(static_cast<ConnId>(10 + node), join_as(node, 4096)).empty());
  CHECK(reason(state.on_join(9000, join_as(4096, 1))) ==
        "host4096's 1 ranks would make the job more than 16777216 ranks");
  // A node that leaves gives its ranks back.
  state.on_leave(10);
  CHECK(state.on_join(9001, join_as(0, 4096)).empty());
}

TEST_CASE("a node that leaves before assignment frees its slot") {
  RendezvousState state({2, "job", 0, "a", 0, {}});
  CHECK(state.on_join(1, join_as(0, 1)).empty());
  state.on_leave(1);
  CHECK(state.on_join(2, join_as(0, 1)).empty());
  CHECK(state.on_join(3, join_as(1, 1)).size() == 2);
}

TEST_CASE("a fixed master port wins over node 0's free port") {
  RendezvousState state({1, "job", 0, "a", 29500, {}});
  auto out = state.on_join(1, join_as(0, 2));
  REQUIRE(out.size() == 1);
  CHECK(std::get<proto::Assign>(out[0].message).master_port == 29500);
}

TEST_CASE("restart rounds wait for every agent and bump the round with a fresh port") {
  RendezvousState state({2, "job", 3, "a", 0, {}});
  state.on_join(1, join_as(0, 1));
  state.on_join(2, join_as(1, 1));
  REQUIRE(state.assigned());
  CHECK(state.on_agent_done(1, proto::AgentDone{0, 41000}).empty());
  CHECK(state.begin_restart().empty());  // node 1 still running
  auto out = state.on_agent_done(2, proto::AgentDone{0, 42000});
  REQUIRE(out.size() == 2);
  const auto& a = std::get<proto::Assign>(out[0].message);
  CHECK(a.round == 1);
  CHECK(a.max_restarts == 3);
  CHECK(a.master_port == 41000);
  CHECK(state.round() == 1);
  // stale AgentDone of an old round does not count
  CHECK(state.on_agent_done(1, proto::AgentDone{0, 0}).empty());
  CHECK_FALSE(state.all_done());
}

TEST_CASE("held for the network: nobody is assigned until the probed choice arrives") {
  RendezvousState::Config config{3, "job", 1, "mgmt-name", 0, {}};
  config.hold_for_network = true;
  RendezvousState state(config);
  for (int node = 0; node < 3; ++node)
    CHECK(state.on_join(static_cast<ConnId>(node + 1), join_as(node, 1)).empty());
  CHECK(state.all_joined());
  CHECK_FALSE(state.assigned());
  auto out = state.assign_with_network("198.18.1.10", {"ens5", "eth7", ""});
  REQUIRE(out.size() == 3);
  for (const auto& o : out) {
    const auto& a = std::get<proto::Assign>(o.message);
    CHECK(a.master_addr == "198.18.1.10");
    CHECK(a.socket_ifname == (a.node_rank == 0 ? "ens5" : a.node_rank == 1 ? "eth7" : ""));
  }
  CHECK(state.master_addr() == "198.18.1.10");
  // A restart round keeps the choice.
  CHECK(state.begin_restart().empty());
  std::vector<Outbound> again;
  for (int node = 0; node < 3; ++node) {
    auto o = state.on_agent_done(static_cast<ConnId>(node + 1), proto::AgentDone{0, 40000});
    if (!o.empty()) again = o;
  }
  REQUIRE(again.size() == 3);
  CHECK(std::get<proto::Assign>(again[1].message).master_addr == "198.18.1.10");
  CHECK(std::get<proto::Assign>(again[1].message).socket_ifname == "eth7");
  // A second choice is ignored: the job has started.
  CHECK(state.assign_with_network("10.0.0.1", {}).empty());
}

TEST_CASE("after the assignment a join is refused, unless the job admits late nodes") {
  for (const bool admit_late : {false, true}) {
    RendezvousState::Config config{3, "job", 0, "10.0.0.1", 0, {}};
    config.hold_for_network = true;
    config.admit_late = admit_late;
    RendezvousState state(config);
    state.set_roster({0, 1});
    CHECK(state.on_join(100, join_as(0, 1)).empty());
    CHECK(state.on_join(101, join_as(1, 1)).empty());
    REQUIRE(state.assign_with_network("10.0.0.1", {}).size() == 2);
    const auto late = state.on_join(102, join_as(2, 1));
    if (!admit_late) {
      REQUIRE(late.size() == 1);
      CHECK(std::get<proto::Reject>(late[0].message).reason == "the job has already started");
      continue;
    }
    CHECK(late.empty());  // taken, given nothing: not in this round's roster
    const auto* member = state.member(102);
    REQUIRE(member != nullptr);
    CHECK(member->done);
    CHECK(state.node_rank_of(2) == -1);
    // A later roster takes it.
    state.set_roster({0, 2});
    CHECK(state.node_rank_of(2) == 1);
  }
}

TEST_CASE("nodes without a node rank take the places after node 0's as they join") {
  RendezvousState state({3, "job", 0, "10.0.0.1", 0, {}});
  auto any = join_as(0, 2);
  any.node_rank = RendezvousState::kAnyNodeRank;
  any.host = "late";
  CHECK(state.on_join(201, any).empty());  // before node 0: place 1
  CHECK(state.member(201)->index == 1);
  CHECK(state.on_join(200, join_as(0, 2)).empty());
  auto out = state.on_join(202, any);
  REQUIRE(out.size() == 3);
  CHECK(state.member(202)->index == 2);
  for (const auto& o : out) {
    const auto& a = std::get<proto::Assign>(o.message);
    CHECK(a.node_rank == static_cast<int>(o.to) - 200);
  }
  CHECK(state.local_rank_of(202, 5) == 1);
  CHECK_FALSE(state.local_rank_of(202, 1));
  // Full: refused, naming why.
  RendezvousState full({2, "job", 0, "a", 0, {}});
  CHECK(full.on_join(1, any).empty());
  auto refused = full.on_join(2, any);
  REQUIRE(refused.size() == 1);
  CHECK(std::get<proto::Reject>(refused[0].message).reason ==
        "all 2 places of the job (--nnodes 2) are taken");
  // A host list names every node: no place is given out.
  RendezvousState listed({2, "job", 0, "a", 0, {"host0", "host1"}});
  CHECK(std::holds_alternative<proto::Reject>(listed.on_join(3, any).front().message));
}
