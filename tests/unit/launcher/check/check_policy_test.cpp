// CheckPolicy's course, each case a whole `dlaunch check` run by the real
// CheckRunner over fake agents (fake_check.h): what the user sees (the
// result's rows, the pair matrix, the NCCL test, the exit code) and what each
// agent was told or had done to it (Stop, its stdin closed, a kill).
#include "launcher/check/check_policy.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>

#include "fake_check.h"

using namespace dlaunch;
using dlaunch::testing::FakeCheck;
using std::chrono::milliseconds;
using std::chrono::seconds;

namespace {

// From just before `node`'s Join reached the runner (which then sent
// FactsRequest) to just after its HostFacts did: the exchange's round trip
// lies within it.
std::int64_t check_policy_facts_window_us(const FakeCheck& c, int node) {
  std::int64_t from = 0, to = 0;
  for (const auto& e : c.events()) {
    if (e.node != node) continue;
    if (e.kind == FakeCheck::Event::Kind::joined) from = e.wall_before_us;
    if (e.kind == FakeCheck::Event::Kind::answered &&
        std::holds_alternative<proto::HostFacts>(e.message))
      to = e.wall_after_us;
  }
  REQUIRE(from > 0);
  REQUIRE(to >= from);
  return to - from;
}

// Three healthy hosts up to the end of the matrix: every host reaches node
// 0's region address (h1 and h2 give up on its management address half a
// second after), then three rounds of one pair, each as long as its bulk
// transfers (1 s: the 6 s budget over 3 rounds, capped at the longest round).
void check_policy_through_matrix(FakeCheck& c) {
  c.start();
  c.advance(milliseconds(500));
  REQUIRE(c.result().master_chosen);
  for (int round = 0; round < 3; ++round) {
    const auto tests = c.take_sent_by_node<proto::PeerTest>();
    REQUIRE(tests.size() == 2);
    for (const auto& [from, t] : tests) CHECK(t.duration_ms == 1000);
    c.advance(milliseconds(1000));
  }
  CHECK(c.count_sent<proto::PeerTest>() == 6);
}

proto::GpuFact check_policy_h100() {
  return {"NVIDIA H100", 80ULL << 30};
}

}  // namespace

TEST_CASE("check: joins, facts with clock skew, probe, every pair, stop, finish") {
  FakeCheck::Setup setup;
  setup.script[1].clock_ahead = seconds(2);
  // h2's process outlives its connection a little (draining), as a real one may.
  setup.script[2].exits_after_close = milliseconds(100);
  FakeCheck c(setup);
  c.start();
  // Every agent is asked for its facts once, then probes node 0's candidates
  // at node 0's probe port.
  for (int i = 0; i < 3; ++i) {
    CHECK(c.received_of<proto::FactsRequest>(i).size() == 1);
    const auto probes = c.received_of<proto::Probe>(i);
    REQUIRE(probes.size() == 1);
    REQUIRE(!probes[0].addresses.empty());
    CHECK(probes[0].port == 40000);
    CHECK(probes[0].addresses[0] == "198.19.1.0");  // node 0's hosts-file address first
  }
  // h1 and h2 reach node 0's region address, not its management one, and
  // report half a second after the first answer.
  CHECK_FALSE(c.result().master_chosen);
  c.advance(milliseconds(500));
  const auto& r = c.result();
  CHECK(r.master_chosen);
  CHECK(r.master_addr == "198.18.1.10");
  // h1's clock is 2 s ahead. This machine's clock is the real one here, so
  // the skew is known within its uncertainty, half the exchange's round trip
  // (the arithmetic on exact times: the last case below).
  for (int i = 0; i < 3; ++i) {
    const auto& host = r.hosts[static_cast<std::size_t>(i)];
    REQUIRE(host.clock_skew_us);
    const std::int64_t ahead = i == 1 ? 2'000'000 : 0;
    CHECK(std::llabs(*host.clock_skew_us - ahead) <= host.clock_uncertainty_us + 1);
    CHECK(host.clock_uncertainty_us <= check_policy_facts_window_us(c, i) / 2 + 1);
  }
  CHECK(r.hosts[1].test_address == "198.18.1.11");
  CHECK(r.hosts[1].interface == "ens1");
  // Three hosts: three rounds of one pair, both directions each, a round's
  // reports coming once its transfers have run for their duration.
  std::set<std::pair<int, int>> tested;
  for (int round = 0; round < 3; ++round) {
    const auto tests = c.take_sent_by_node<proto::PeerTest>();
    REQUIRE(tests.size() == 2);
    for (const auto& [from, t] : tests) {
      REQUIRE(t.targets.size() == 1);
      CHECK(t.round == round);
      CHECK(t.duration_ms == 1000);  // the 6 s budget over 3 rounds, capped at 1 s
      CHECK(t.targets[0].port == 40000 + t.targets[0].node);
      CHECK(t.targets[0].address == FakeCheck::region_address(t.targets[0].node));
      CHECK(tested.insert({from, t.targets[0].node}).second);
    }
    CHECK(c.count_sent<proto::Stop>() == 0);
    c.advance(milliseconds(1000));
  }
  CHECK(tested.size() == 6);
  for (const auto& p : r.pairs) {
    CHECK(p.tested);
    CHECK(p.result.reached);
  }
  CHECK(c.count_sent<proto::Stop>() == 3);
  for (int i = 0; i < 3; ++i) CHECK(c.received_of<proto::Stop>(i).size() == 1);
  // Joined agents learn of the end from Stop alone, as a job's do: their
  // stdin closing as well would race it (and lose, behind a relay).
  CHECK(c.stdin_closed().empty());
  // h0 and h1 have exited; the check waits for h2's agent to exit too.
  CHECK(c.agent(0).exited);
  CHECK_FALSE(c.agent(2).exited);
  CHECK_FALSE(c.finished());
  c.advance(milliseconds(100));
  CHECK(c.finished());
  for (int i = 0; i < 3; ++i) CHECK(c.agent(i).kills == 0);
  CHECK(check_exit_code(r) == 0);
}

TEST_CASE("check: a host whose agent cannot start is a row with the reason; the rest go on") {
  FakeCheck::Setup setup;
  setup.script[2].start_fails_with = -1;
  setup.script[2].start_error = "h2: cannot connect to 198.19.1.2:22: timed out";
  FakeCheck c(setup);
  c.start();
  const auto& r = c.result();
  CHECK_FALSE(r.hosts[2].up);
  // Named once: the report puts the host before its error.
  CHECK(r.hosts[2].error == "cannot connect to 198.19.1.2:22: timed out");
  c.advance(milliseconds(500));  // h1's probe report
  CHECK(r.master_chosen);
  const auto tests = c.take_sent_by_node<proto::PeerTest>();
  CHECK(tests.size() == 2);  // h0 <-> h1 only
  CHECK(tests.count(0) == 1);
  CHECK(tests.count(1) == 1);
  c.advance(milliseconds(1000));
  CHECK(c.count_sent<proto::Stop>() == 2);
  CHECK(c.received_of<proto::Stop>(2).empty());
  CHECK_FALSE(c.agent(2).stdin_closed);  // it never ran: nothing to tell
  CHECK(c.finished());
  CHECK(check_exit_code(r) == 1);
  int untested = 0;
  for (const auto& p : r.pairs) {
    if (p.from != 2 && p.to != 2) continue;
    CHECK_FALSE(p.tested);
    CHECK(p.untested == "h2 is down");
    ++untested;
  }
  CHECK(untested == 4);
}

TEST_CASE("check: h1 blocked from node 0: no MASTER_ADDR, the matrix still runs and shows it") {
  FakeCheck::Setup setup;
  setup.blocked = {{1, 0}, {0, 1}};
  FakeCheck c(setup);
  c.start();
  // h1 reaches none of node 0's addresses: its report comes at the probe's
  // timeout (3 s). As in a job, a host that reached nothing is asked once more.
  c.advance(seconds(3));
  CHECK(c.received_of<proto::Probe>(1).size() == 2);
  CHECK(c.count_sent<proto::PeerTest>() == 0);
  c.advance(seconds(3));
  CHECK(c.received_of<proto::Probe>(1).size() == 2);
  const auto& r = c.result();
  CHECK_FALSE(r.master_chosen);
  CHECK(r.master_report.find("no address of node 0") != std::string::npos);
  // Tested at the address most hosts reached; h1 on the interface its route takes.
  CHECK(r.hosts[0].test_address == "198.18.1.10");
  CHECK(r.hosts[1].test_address == "198.18.1.11");
  CHECK(r.hosts[1].interface == "ens1");
  // The h0 - h1 round ends at the connect timeout (3 s), the others after their transfers.
  for (int round = 0; round < 3; ++round) {
    const auto tests = c.take_sent_by_node<proto::PeerTest>();
    REQUIRE(tests.size() == 2);
    const bool blocked_round = tests.count(0) && tests.count(1);
    CHECK(c.count_sent<proto::Stop>() == 0);
    c.advance(blocked_round ? seconds(3) : seconds(1));
  }
  CHECK(c.count_sent<proto::Stop>() == 3);
  const auto* h1_h0 = find_pair(r, 1, 0);
  REQUIRE(h1_h0 != nullptr);
  CHECK(h1_h0->tested);
  CHECK_FALSE(h1_h0->result.reached);
  const auto problems = launch_problems(r);
  CHECK(std::find(problems.begin(), problems.end(), "h1 -> h0 (198.18.1.10): timed out") !=
        problems.end());
  CHECK(c.finished());
}

TEST_CASE("check: a host that never joins is given up on at the timeout and killed") {
  FakeCheck::Setup setup;
  setup.hosts = 2;
  // h1's SSH session hangs: its agent never joins, and neither its stdin
  // closing nor a kill gets through to end it.
  setup.script[1].joins_after = std::nullopt;
  setup.script[1].ends_when_told = false;
  setup.script[1].ends_when_killed = false;
  FakeCheck c(setup);
  c.start();
  CHECK(c.result().hosts[0].up);
  c.advance(seconds(60) - milliseconds(1));
  CHECK_FALSE(c.result().hosts[1].up);
  CHECK(c.agent(1).kills == 0);
  CHECK(c.count_sent<proto::Probe>() == 0);  // the probe waits for every host
  c.advance(milliseconds(1));
  const auto& r = c.result();
  CHECK_FALSE(r.hosts[1].up);
  CHECK(r.hosts[1].error.find("did not join within 60 s") != std::string::npos);
  CHECK(c.agent(1).kills == 1);
  // Node 0 alone: probed, no pair to test, then stopped.
  CHECK(c.received_of<proto::Probe>(0).size() == 1);
  CHECK(c.count_sent<proto::PeerTest>() == 0);
  CHECK(c.count_sent<proto::Stop>() == 1);
  CHECK(c.received_of<proto::Stop>(0).size() == 1);
  CHECK(c.stdin_closed() == std::set<int>{1});  // it has no connection to be told on
  // h0's agent has exited, h1's has not: the stop grace (5 s) ends it.
  CHECK(c.agent(0).exited);
  c.advance(seconds(5) - milliseconds(1));
  CHECK_FALSE(c.finished());
  c.advance(milliseconds(1));
  CHECK(c.finished());
  CHECK(c.agent(1).kills == 2);
  CHECK(c.has_log("warn: agent on h1 did not exit in time; killing it"));
  CHECK(check_exit_code(r) == 1);
}

TEST_CASE("check, facts only: every host's facts, then stop; no probe, no pairs") {
  FakeCheck::Setup setup;
  setup.facts_only = true;
  setup.script[2].joins_after = seconds(1);
  setup.script[2].gpus = {{"NVIDIA H100", 80ULL << 30, 1ULL << 30, 42, "train"}};
  FakeCheck c(setup);
  c.start();
  CHECK(c.result().hosts[0].up);
  CHECK(c.result().hosts[1].up);
  CHECK(c.count_sent<proto::Stop>() == 0);  // h2's facts are still due
  c.advance(seconds(1));
  CHECK(c.count_sent<proto::Stop>() == 3);
  CHECK(c.count_sent<proto::Probe>() == 0);
  CHECK(c.count_sent<proto::PeerTest>() == 0);
  const auto& r = c.result();
  CHECK(r.pairs.empty());
  CHECK_FALSE(r.master_chosen);
  for (const auto& h : r.hosts) CHECK(h.up);
  REQUIRE(r.hosts[2].facts);
  REQUIRE(r.hosts[2].facts->gpus.size() == 1);
  CHECK(r.hosts[2].facts->gpus[0].held_by_job == "train");
  CHECK(r.hosts[2].facts->gpus[0].utilization_pct == 42);
  CHECK(c.finished());
}

TEST_CASE("check, facts only: a host that does not join is down at the timeout; the rest stop") {
  {
    FakeCheck::Setup setup;
    setup.hosts = 2;
    setup.facts_only = true;
    setup.script[1].start_fails_with = 255;
    setup.script[1].start_error = "h1: cannot connect: refused";
    setup.script[0].joins_after = seconds(1);
    FakeCheck c(setup);
    c.start();
    CHECK(c.count_sent<proto::Stop>() == 0);
    CHECK_FALSE(c.finished());
    c.advance(seconds(1));
    CHECK(c.count_sent<proto::Stop>() == 1);
    CHECK(c.received_of<proto::Stop>(0).size() == 1);
    CHECK(c.count_sent<proto::Probe>() == 0);
    CHECK(c.count_sent<proto::PeerTest>() == 0);
    const auto& r = c.result();
    CHECK(r.hosts[0].up);
    CHECK_FALSE(r.hosts[1].up);
    CHECK(r.hosts[1].error == "cannot connect: refused");
    CHECK(c.finished());
  }
  {
    FakeCheck::Setup setup;
    setup.hosts = 2;
    setup.facts_only = true;
    setup.script[1].answers_facts = false;  // joined, never answers
    FakeCheck c(setup);
    c.start();
    CHECK(c.count_sent<proto::Stop>() == 0);
    c.advance(seconds(60));
    CHECK(c.count_sent<proto::Stop>() == 2);  // h1 is connected: it is told too
    CHECK(c.count_sent<proto::Probe>() == 0);
    CHECK(c.count_sent<proto::PeerTest>() == 0);
    CHECK(c.result().hosts[1].error.find("did not answer") != std::string::npos);
    CHECK(c.agent(1).kills == 1);
    CHECK(c.finished());
  }
}

TEST_CASE(
    "check --nccl: every GPU a rank in host order, rank 0's host makes the id, slowest wins") {
  FakeCheck::Setup setup;
  setup.nccl = true;
  setup.script[0].gpus = {check_policy_h100(), check_policy_h100()};
  setup.script[0].nccl_time_ns = {10'000, 20'000};
  setup.script[0].nccl_takes = seconds(1);
  setup.script[2].gpus = {check_policy_h100()};
  setup.script[2].nccl_time_ns = {15'000, 18'000};
  setup.script[2].nccl_takes = seconds(2);
  FakeCheck c(setup);
  check_policy_through_matrix(c);
  CHECK(c.count_sent<proto::Stop>() == 0);
  const auto asked = c.take_sent<proto::NcclTest>();
  REQUIRE(asked.size() == 3);
  // Only h0 first, for the unique id ...
  CHECK(asked[0].first == 0);
  CHECK(asked[0].second.unique_id.empty());
  CHECK(asked[0].second.socket_ifname == "=ens0");
  // ... and only once it has come back, the test on every host with a GPU (h1 has none).
  std::size_t id_back = 0, second_asked = 0;
  for (std::size_t i = 0; i < c.events().size(); ++i) {
    const auto& e = c.events()[i];
    if (e.kind == FakeCheck::Event::Kind::answered && e.node == 0 &&
        std::holds_alternative<proto::NcclReport>(e.message) && id_back == 0)
      id_back = i;
    if (e.kind == FakeCheck::Event::Kind::sent &&
        std::holds_alternative<proto::NcclTest>(e.message) && e.node != 0 && second_asked == 0)
      second_asked = i;
  }
  CHECK(id_back > 0);
  CHECK(id_back < second_asked);
  std::map<int, proto::NcclTest> tests;
  for (std::size_t i = 1; i < asked.size(); ++i) tests[asked[i].first] = asked[i].second;
  REQUIRE(tests.size() == 2);
  REQUIRE(tests.count(0) == 1);
  REQUIRE(tests.count(2) == 1);
  CHECK(tests[0].unique_id == std::string(proto::kNcclUniqueIdBytes, 'a'));  // h0's
  CHECK(tests[2].unique_id == std::string(proto::kNcclUniqueIdBytes, 'a'));
  CHECK(tests[0].nranks == 3);
  CHECK(tests[0].first_rank == 0);
  CHECK(tests[0].gpus == 2);
  CHECK(tests[2].nranks == 3);
  CHECK(tests[2].first_rank == 2);
  CHECK(tests[2].gpus == 1);
  CHECK(tests[2].socket_ifname == "=ens2");
  CHECK(tests[2].sizes == std::vector<std::int64_t>{8, 1024});
  c.advance(seconds(1));  // h0's all-reduce
  CHECK(c.count_sent<proto::Stop>() == 0);
  c.advance(seconds(1));  // h2's
  CHECK(c.count_sent<proto::Stop>() == 3);
  const auto& nccl = c.result().nccl;
  CHECK(nccl.requested);
  CHECK(nccl.gpus == 3);
  CHECK(nccl.hosts == 2);
  CHECK(nccl.version == "2.27.3");
  CHECK(nccl.error.empty());
  REQUIRE(nccl.timings.size() == 2);
  CHECK(nccl.timings[0].time_ns == 15'000);
  CHECK(nccl.timings[1].time_ns == 20'000);
  CHECK(check_exit_code(c.result()) == 0);
  CHECK(c.finished());
}

TEST_CASE("check --nccl: a host's NCCL error fails the check, naming the host") {
  FakeCheck::Setup setup;
  setup.nccl = true;
  for (int i = 0; i < 3; ++i) {
    setup.script[i].gpus = {check_policy_h100()};
    setup.script[i].nccl_takes = seconds(1);
  }
  setup.script[1].nccl_error = "ncclCommInitRank: unhandled system error";
  FakeCheck c(setup);
  check_policy_through_matrix(c);
  // h0 for the id, then the test on all three; h1 fails at once, and the
  // check stops without waiting for the others.
  const auto asked = c.take_sent<proto::NcclTest>();
  REQUIRE(asked.size() == 4);
  std::set<int> with_id;
  for (const auto& [node, t] : asked) {
    if (!t.unique_id.empty()) CHECK(with_id.insert(node).second);
  }
  CHECK(with_id == std::set<int>{0, 1, 2});
  CHECK(c.count_sent<proto::Stop>() == 3);
  const auto& r = c.result();
  CHECK(r.nccl.error == "h1: ncclCommInitRank: unhandled system error");
  CHECK(r.nccl.timings.empty());
  CHECK(check_exit_code(r) == 1);
  const auto problems = launch_problems(r);
  REQUIRE(!problems.empty());
  CHECK(problems.back() ==
        "the NCCL all-reduce failed: h1: ncclCommInitRank: unhandled system error");
  CHECK(c.finished());
}

TEST_CASE("check --nccl: no GPUs anywhere: skipped with the reason, the check still passes") {
  FakeCheck::Setup setup;
  setup.nccl = true;
  FakeCheck c(setup);
  check_policy_through_matrix(c);
  CHECK(c.count_sent<proto::NcclTest>() == 0);
  CHECK(c.count_sent<proto::Stop>() == 3);
  const auto& r = c.result();
  CHECK(r.nccl.skipped.find("no host that is up has a GPU") == 0);
  CHECK(check_exit_code(r) == 0);
  CHECK(c.finished());
}

TEST_CASE("check --nccl: a host that never answers is named at the timeout") {
  FakeCheck::Setup setup;
  setup.nccl = true;
  setup.script[0].gpus = {check_policy_h100()};
  setup.script[0].nccl_time_ns = {1, 2};
  setup.script[2].gpus = {check_policy_h100()};
  setup.script[2].answers_nccl = false;  // it hangs in NCCL
  FakeCheck c(setup);
  check_policy_through_matrix(c);
  CHECK(c.received_of<proto::NcclTest>(0).size() == 2);  // the id, then the test
  CHECK(c.received_of<proto::NcclTest>(2).size() == 1);
  c.advance(seconds(180) - milliseconds(1));
  CHECK(c.count_sent<proto::Stop>() == 0);
  c.advance(milliseconds(1));
  CHECK(c.result().nccl.error == "no answer within 180 s from h2");
  CHECK(c.count_sent<proto::Stop>() == 3);
  CHECK(c.finished());
}

// A fleet past net::ProbeRounds' threshold, with one address every host
// reaches and one that only node 0 does: the check probes as a job would.
TEST_CASE("check of a big fleet: the probe goes in rounds within the window, as a job's does") {
  const int n = 300;  // rounds from net::ProbeRounds::kRoundsFromNodes (256) on
  FakeCheck::Setup setup;
  setup.hosts = n;
  FakeCheck c(setup);
  c.start();
  // Only the scouts first, each asked for every address: not every host's
  // connection to every address at node 0's listener at once.
  auto probes = c.take_sent_by_node<proto::Probe>();
  CHECK(probes.size() == net::ProbeRounds::kScouts);
  CHECK(probes.count(0) == 1);
  for (const auto& [node, probe] : probes) {
    CHECK(probe.addresses ==
          std::vector<std::string>{FakeCheck::management_address(0), "198.18.1.10"});
  }
  const std::set<int> scouts = [&] {
    std::set<int> s;
    for (const auto& [node, probe] : probes) s.insert(node);
    return s;
  }();
  // The scouts but node 0 give up on its management address half a second after.
  c.advance(milliseconds(500));
  // Then everyone else, for the scouts' choice alone, within the window.
  probes = c.take_sent_by_node<proto::Probe>();
  CHECK(probes.size() == n - net::ProbeRounds::kScouts);
  std::size_t connections = 0;
  for (const auto& [node, probe] : probes) {
    CHECK(scouts.count(node) == 0);
    CHECK(probe.addresses == std::vector<std::string>{"198.18.1.10"});
    connections += probe.addresses.size();
  }
  CHECK(connections == n - net::ProbeRounds::kScouts);
  CHECK(c.most_probe_connections() <= MasterProbe::kConnectionsInFlight);
  int answered = 0;
  for (const auto& e : c.events()) {
    answered += e.kind == FakeCheck::Event::Kind::answered &&
                        std::holds_alternative<proto::ProbeReport>(e.message)
                    ? 1
                    : 0;
  }
  CHECK(answered == n);
  const auto& r = c.result();
  CHECK(r.master_chosen);
  CHECK(r.master_addr == "198.18.1.10");
}

TEST_CASE("check: a host lost while the others probe is waited for no more") {
  FakeCheck::Setup setup;
  setup.script[2].answers_probe = false;  // still probing when its connection breaks
  FakeCheck c(setup);
  c.start();
  c.advance(milliseconds(500));  // h0's and h1's reports are in
  CHECK_FALSE(c.result().master_chosen);
  c.connection_lost(2, "reset by peer");
  // The MASTER_ADDR choice is made among the hosts that are up, at once.
  const auto& r = c.result();
  CHECK(c.now() == milliseconds(500));
  CHECK(r.master_chosen);
  CHECK(r.master_addr == "198.18.1.10");
  CHECK_FALSE(r.hosts[2].up);
  CHECK(r.hosts[2].error.find("reset by peer") != std::string::npos);
  CHECK(c.agent(2).kills == 1);
}

// The skew's arithmetic, on times of the test's choosing: CheckRunner reads
// this machine's clock itself, so a run through it (the first case) can only
// bound the skew. The agent read its clock halfway through the exchange at
// best guess; half the round trip is the bound.
TEST_CASE("check: a host's clock skew is read against the middle of its facts exchange") {
  CheckPolicy::Config config;
  config.hosts = {{"h0", "198.19.1.0"}, {"h1", "198.19.1.1"}};
  CheckPolicy policy(config);
  policy.start();
  proto::Join join;
  join.node_rank = 1;
  join.host = "h1";
  join.probe_port = 40001;
  policy.on_join(ConnId{101}, join, 1'000'000);
  proto::HostFacts facts;
  facts.wall_clock_us = 3'000'200;  // 2 s ahead; the exchange took 400 us
  policy.on_message(ConnId{101}, facts, 1'000'400);
  const auto& row = policy.result().hosts[1];
  CHECK(row.up);
  CHECK(row.clock_skew_us == 2'000'000);
  CHECK(row.clock_uncertainty_us == 200);
}
