#include <doctest/doctest.h>

#include <map>

#include "launcher/check/check_policy.h"

using namespace dlaunch;

namespace {

// Drives a CheckPolicy as the runner would, with agents made up in the test:
// the actions are collected and looked at by kind.
struct FakeCheck {
  explicit FakeCheck(int n, std::int64_t stop_grace_ms = 5000, bool facts_only = false,
                     bool nccl = false) {
    CheckPolicy::Config config;
    config.facts_only = facts_only;
    config.nccl = nccl;
    config.nccl_sizes = {8, 1024};
    for (int i = 0; i < n; ++i)
      config.hosts.push_back({"h" + std::to_string(i), "198.19.1." + std::to_string(i)});
    config.master_sources.node0_address = "198.19.1.0";  // a management address: reached by h0 only
    config.stop_grace = std::chrono::milliseconds(stop_grace_ms);
    policy.emplace(config);
    take(policy->start());
  }

  std::optional<CheckPolicy> policy;
  std::vector<CheckAction> actions;
  bool finished = false;

  void take(CheckActions more) {
    for (auto& a : more) {
      if (std::holds_alternative<check_action::Finish>(a)) finished = true;
      actions.push_back(std::move(a));
    }
  }
  // The nodes whose stdin the policy has closed so far.
  std::set<int> stdin_closed() const {
    std::set<int> nodes;
    for (const auto& a : actions)
      if (const auto* c = std::get_if<check_action::CloseStdin>(&a)) nodes.insert(c->node);
    return nodes;
  }
  static ConnId conn(int node) { return static_cast<ConnId>(100 + node); }
  static std::string region_address(int node) { return "198.18.1." + std::to_string(10 + node); }

  void join(int node, std::int64_t now_us = 1'000'000) {
    proto::Join j;
    j.node_rank = node;
    j.host = "h" + std::to_string(node);
    j.probe_port = 40000 + node;
    j.interfaces = {{"lo", net::InterfaceKind::loopback, 65536, true, {{"127.0.0.1", 8, false}}},
                    {"eth0",
                     net::InterfaceKind::veth,
                     1500,
                     true,
                     {{"198.19.1." + std::to_string(node), 30, false}}},
                    {"ens" + std::to_string(node),
                     net::InterfaceKind::physical,
                     1500,
                     true,
                     {{region_address(node), 24, false}}}};
    take(policy->on_join(conn(node), j, now_us));
  }
  void facts(int node, std::int64_t agent_clock_us, std::int64_t now_us = 1'000'400, int gpus = 0) {
    proto::HostFacts f;
    f.gpus.resize(static_cast<std::size_t>(gpus), {"NVIDIA H100", 80LL << 30});
    f.cpus = 4;
    f.shm_size = 1LL << 30;
    f.python_version = "3.11.2";
    f.wall_clock_us = agent_clock_us;
    take(policy->on_message(conn(node), f, now_us));
  }
  // Each node reaches the candidates listed as reached (by address).
  void probe_report(int node, const std::map<std::string, bool>& reached) {
    proto::ProbeReport report;
    for (const auto& address : last_probe().addresses) {
      const bool ok = reached.count(address) && reached.at(address);
      report.outcomes.push_back(
          {ok, ok ? 300 : 0, "ens" + std::to_string(node), ok ? "" : "timed out"});
    }
    take(policy->on_message(conn(node), report, 0));
  }
  proto::Probe last_probe() const {
    for (auto it = actions.rbegin(); it != actions.rend(); ++it) {
      if (const auto* s = std::get_if<check_action::Send>(&*it)) {
        if (const auto* p = std::get_if<proto::Probe>(&s->message)) return *p;
      }
    }
    return {};
  }
  // The messages of type M sent since `seen`, by receiving node.
  template <class M>
  std::map<int, M> sent_since(std::size_t& seen) {
    std::map<int, M> out;
    for (; seen < actions.size(); ++seen) {
      if (const auto* s = std::get_if<check_action::Send>(&actions[seen])) {
        if (const auto* m = std::get_if<M>(&s->message)) out[static_cast<int>(s->to - 100)] = *m;
      }
    }
    return out;
  }
  // The PeerTests sent since the last call, by sender node.
  std::map<int, proto::PeerTest> peer_tests() { return sent_since<proto::PeerTest>(seen_); }
  // Answers every PeerTest: reached unless (from, to) is in `blocked`.
  void answer(const std::map<int, proto::PeerTest>& tests,
              const std::set<std::pair<int, int>>& blocked = {}) {
    for (const auto& [from, test] : tests) {
      proto::PeerTestReport report;
      report.round = test.round;
      for (const auto& t : test.targets) {
        const bool ok = !blocked.count({from, t.node});
        report.results.push_back(
            {t.node, ok, ok ? 500 : 0, ok ? 1000u : 0u, ok ? 1000 : 0, ok ? "" : "timed out"});
      }
      take(policy->on_message(conn(from), report, 0));
    }
  }
  // The NcclTests sent since the last call, by node.
  std::map<int, proto::NcclTest> nccl_tests() { return sent_since<proto::NcclTest>(nccl_seen_); }
  // Up to the NCCL test: 3 hosts joined with these GPUs, h0 holding the
  // region address every host reaches, every pair answered.
  void through_matrix(const std::vector<int>& gpus) {
    for (int i = 0; i < 3; ++i) join(i);
    for (int i = 0; i < 3; ++i) facts(i, 1'000'200, 1'000'400, gpus[static_cast<std::size_t>(i)]);
    probe_report(0, {{"198.19.1.0", true}, {"198.18.1.10", true}});
    probe_report(1, {{"198.18.1.10", true}});
    probe_report(2, {{"198.18.1.10", true}});
    for (int round = 0; round < 3; ++round) answer(peer_tests());
  }
  void nccl_report(int node, proto::NcclReport report) {
    take(policy->on_message(conn(node), report, 0));
  }
  int count_sent_probes_or_tests() const {
    int n = 0;
    for (const auto& a : actions) {
      if (const auto* s = std::get_if<check_action::Send>(&a))
        n += std::holds_alternative<proto::Probe>(s->message) ||
                     std::holds_alternative<proto::PeerTest>(s->message)
                 ? 1
                 : 0;
    }
    return n;
  }
  int count_stops() const {
    int n = 0;
    for (const auto& a : actions) {
      if (const auto* s = std::get_if<check_action::Send>(&a))
        n += std::holds_alternative<proto::Stop>(s->message) ? 1 : 0;
    }
    return n;
  }
  std::size_t seen_ = 0;
  std::size_t nccl_seen_ = 0;
};

}  // namespace

TEST_CASE("check: joins, facts with clock skew, probe, every pair, stop, finish") {
  FakeCheck c(3);
  for (int i = 0; i < 3; ++i) c.join(i);
  // h1's clock is 2 s ahead; the exchange took 400 us.
  c.facts(0, 1'000'200);
  c.facts(1, 3'000'200);
  c.facts(2, 1'000'100);
  const auto probe = c.last_probe();
  REQUIRE(!probe.addresses.empty());
  CHECK(probe.port == 40000);
  CHECK(probe.addresses[0] == "198.19.1.0");  // node 0's hosts-file address first
  c.probe_report(0, {{"198.19.1.0", true}, {"198.18.1.10", true}});
  c.probe_report(1, {{"198.18.1.10", true}});
  c.probe_report(2, {{"198.18.1.10", true}});
  const auto& r = c.policy->result();
  CHECK(r.master_chosen);
  CHECK(r.master_addr == "198.18.1.10");
  CHECK(r.hosts[1].clock_skew_us == 2'000'000);
  CHECK(r.hosts[1].clock_uncertainty_us == 200);
  CHECK(r.hosts[1].test_address == "198.18.1.11");
  CHECK(r.hosts[1].interface == "ens1");
  // Three hosts: three rounds of one pair, both directions each.
  std::set<std::pair<int, int>> tested;
  for (int round = 0; round < 3; ++round) {
    auto tests = c.peer_tests();
    REQUIRE(tests.size() == 2);
    for (const auto& [from, t] : tests) {
      REQUIRE(t.targets.size() == 1);
      CHECK(t.round == round);
      CHECK(t.targets[0].port == 40000 + t.targets[0].node);
      CHECK(t.targets[0].address == FakeCheck::region_address(t.targets[0].node));
      CHECK(tested.insert({from, t.targets[0].node}).second);
    }
    CHECK(c.count_stops() == 0);
    c.answer(tests);
  }
  CHECK(tested.size() == 6);
  CHECK(c.count_stops() == 3);
  // Joined agents learn of the end from Stop alone, as a job's do: their
  // stdin closing as well would race it (and lose, behind a relay).
  CHECK(c.stdin_closed().empty());
  CHECK_FALSE(c.finished);
  for (int i = 0; i < 3; ++i) c.take(c.policy->on_agent_exited(i, 0, "", ""));
  CHECK(c.finished);
  CHECK(check_exit_code(c.policy->result()) == 0);
}

TEST_CASE("check: a host whose agent cannot start is a row with the reason; the rest go on") {
  FakeCheck c(3);
  c.take(c.policy->on_agent_exited(2, -1, "h2: cannot connect to 198.19.1.2:22: timed out", ""));
  c.join(0);
  c.join(1);
  c.facts(0, 1'000'200);
  c.facts(1, 1'000'200);
  c.probe_report(0, {{"198.18.1.10", true}});
  c.probe_report(1, {{"198.18.1.10", true}});
  const auto& r = c.policy->result();
  CHECK_FALSE(r.hosts[2].up);
  // Named once: the report puts the host before its error.
  CHECK(r.hosts[2].error == "cannot connect to 198.19.1.2:22: timed out");
  auto tests = c.peer_tests();
  CHECK(tests.size() == 2);  // h0 <-> h1 only
  c.answer(tests);
  CHECK(c.count_stops() == 2);
  c.take(c.policy->on_agent_exited(0, 0, "", ""));
  c.take(c.policy->on_agent_exited(1, 0, "", ""));
  CHECK(c.finished);
  CHECK(check_exit_code(r) == 1);
  bool untested = false;
  for (const auto& p : r.pairs) {
    if (p.from == 2) untested = !p.tested && p.untested == "h2 is down";
  }
  CHECK(untested);
}

TEST_CASE("check: h1 blocked from node 0: no MASTER_ADDR, the matrix still runs and shows it") {
  FakeCheck c(3);
  for (int i = 0; i < 3; ++i) c.join(i);
  for (int i = 0; i < 3; ++i) c.facts(i, 1'000'200);
  c.probe_report(0, {{"198.19.1.0", true}, {"198.18.1.10", true}});
  c.probe_report(1, {});
  c.probe_report(2, {{"198.18.1.10", true}});
  // As in a job, a host that reached nothing is asked once more.
  CHECK(c.peer_tests().empty());
  c.probe_report(1, {});
  const auto& r = c.policy->result();
  CHECK_FALSE(r.master_chosen);
  CHECK(r.master_report.find("no address of node 0") != std::string::npos);
  // Tested at the address most hosts reached; h1 on the interface its route takes.
  CHECK(r.hosts[0].test_address == "198.18.1.10");
  CHECK(r.hosts[1].test_address == "198.18.1.11");
  for (int round = 0; round < 3; ++round) c.answer(c.peer_tests(), {{1, 0}, {0, 1}});
  CHECK(c.count_stops() == 3);
  const auto problems = launch_problems(r);
  CHECK(std::find(problems.begin(), problems.end(), "h1 -> h0 (198.18.1.10): timed out") !=
        problems.end());
}

TEST_CASE("check: a host that never joins is given up on at the timeout and killed") {
  FakeCheck c(2);
  c.join(0);
  c.facts(0, 1'000'200);
  c.take(c.policy->on_timer(CheckTimer::join));
  const auto& r = c.policy->result();
  CHECK_FALSE(r.hosts[1].up);
  CHECK(r.hosts[1].error.find("did not join within 60 s") != std::string::npos);
  bool killed = false;
  for (const auto& a : c.actions) {
    if (const auto* k = std::get_if<check_action::KillAgent>(&a)) killed = killed || k->node == 1;
  }
  CHECK(killed);
  // Node 0 alone: probed, no pair to test, then stopped.
  c.probe_report(0, {{"198.19.1.0", true}});
  CHECK(c.count_stops() == 1);
  CHECK(c.stdin_closed() == std::set<int>{1});  // it has no connection to be told on
  c.take(c.policy->on_timer(CheckTimer::stop));
  CHECK(c.finished);
  CHECK(check_exit_code(r) == 1);
}

TEST_CASE("check, facts only: every host's facts, then stop; no probe, no pairs") {
  FakeCheck c(3, 5000, true);
  for (int i = 0; i < 3; ++i) c.join(i);
  c.facts(0, 1'000'200);
  c.facts(1, 1'000'200);
  CHECK(c.count_stops() == 0);  // h2's facts are still due
  proto::HostFacts f;
  f.gpus.push_back({"NVIDIA H100", 80ULL << 30, 1ULL << 30, 42, "train"});
  c.take(c.policy->on_message(FakeCheck::conn(2), f, 1'000'400));
  CHECK(c.count_stops() == 3);
  CHECK(c.count_sent_probes_or_tests() == 0);
  const auto& r = c.policy->result();
  CHECK(r.pairs.empty());
  CHECK_FALSE(r.master_chosen);
  for (const auto& h : r.hosts) CHECK(h.up);
  REQUIRE(r.hosts[2].facts);
  REQUIRE(r.hosts[2].facts->gpus.size() == 1);
  CHECK(r.hosts[2].facts->gpus[0].held_by_job == "train");
  CHECK(r.hosts[2].facts->gpus[0].utilization_pct == 42);
  for (int i = 0; i < 3; ++i) c.take(c.policy->on_agent_exited(i, 0, "", ""));
  CHECK(c.finished);
}

TEST_CASE("check, facts only: a host that does not join is down at the timeout; the rest stop") {
  FakeCheck c(2, 5000, true);
  c.take(c.policy->on_agent_exited(1, 255, "h1: cannot connect: refused", ""));
  CHECK(c.count_stops() == 0);
  c.join(0);
  c.facts(0, 1'000'200);
  CHECK(c.count_stops() == 1);
  CHECK(c.count_sent_probes_or_tests() == 0);
  const auto& r = c.policy->result();
  CHECK(r.hosts[0].up);
  CHECK_FALSE(r.hosts[1].up);
  CHECK(r.hosts[1].error == "cannot connect: refused");
  c.take(c.policy->on_agent_exited(0, 0, "", ""));
  CHECK(c.finished);

  FakeCheck late(2, 5000, true);
  late.join(0);
  late.facts(0, 1'000'200);
  late.join(1);  // joined, never answers
  late.take(late.policy->on_timer(CheckTimer::join));
  CHECK(late.count_stops() == 2);
  CHECK(late.count_sent_probes_or_tests() == 0);
  CHECK(late.policy->result().hosts[1].error.find("did not answer") != std::string::npos);
  late.take(late.policy->on_timer(CheckTimer::stop));
  CHECK(late.finished);
}

TEST_CASE(
    "check --nccl: every GPU a rank in host order, rank 0's host makes the id, slowest wins") {
  FakeCheck c(3, 5000, false, true);
  c.through_matrix({2, 0, 1});
  CHECK(c.count_stops() == 0);
  auto asked = c.nccl_tests();
  REQUIRE(asked.size() == 1);  // only h0, for the unique id
  REQUIRE(asked.count(0) == 1);
  CHECK(asked[0].unique_id.empty());
  CHECK(asked[0].socket_ifname == "=ens0");
  c.nccl_report(0, {std::string(proto::kNcclUniqueIdBytes, 'x'), "2.27.3", "", {}});
  auto tests = c.nccl_tests();
  REQUIRE(tests.size() == 2);  // h1 has no GPU
  CHECK(tests[0].unique_id == std::string(proto::kNcclUniqueIdBytes, 'x'));
  CHECK(tests[0].nranks == 3);
  CHECK(tests[0].first_rank == 0);
  CHECK(tests[0].gpus == 2);
  CHECK(tests[2].first_rank == 2);
  CHECK(tests[2].gpus == 1);
  CHECK(tests[2].socket_ifname == "=ens2");
  CHECK(tests[2].sizes == std::vector<std::int64_t>{8, 1024});
  c.nccl_report(0, {"", "2.27.3", "", {{8, 10'000}, {1024, 20'000}}});
  CHECK(c.count_stops() == 0);
  c.nccl_report(2, {"", "2.27.3", "", {{8, 15'000}, {1024, 18'000}}});
  CHECK(c.count_stops() == 3);
  const auto& nccl = c.policy->result().nccl;
  CHECK(nccl.requested);
  CHECK(nccl.gpus == 3);
  CHECK(nccl.hosts == 2);
  CHECK(nccl.version == "2.27.3");
  CHECK(nccl.error.empty());
  REQUIRE(nccl.timings.size() == 2);
  CHECK(nccl.timings[0].time_ns == 15'000);
  CHECK(nccl.timings[1].time_ns == 20'000);
  CHECK(check_exit_code(c.policy->result()) == 0);
}

TEST_CASE("check --nccl: a host's NCCL error fails the check, naming the host") {
  FakeCheck c(3, 5000, false, true);
  c.through_matrix({1, 1, 1});
  c.nccl_report(0, {std::string(proto::kNcclUniqueIdBytes, 'x'), "2.27.3", "", {}});
  CHECK(c.nccl_tests().size() == 3);
  c.nccl_report(1, {"", "2.27.3", "ncclCommInitRank: unhandled system error", {}});
  CHECK(c.count_stops() == 3);
  const auto& r = c.policy->result();
  CHECK(r.nccl.error == "h1: ncclCommInitRank: unhandled system error");
  CHECK(check_exit_code(r) == 1);
  const auto problems = launch_problems(r);
  CHECK(problems.back() ==
        "the NCCL all-reduce failed: h1: ncclCommInitRank: unhandled system error");
}

TEST_CASE("check --nccl: no GPUs anywhere: skipped with the reason, the check still passes") {
  FakeCheck c(3, 5000, false, true);
  c.through_matrix({0, 0, 0});
  CHECK(c.nccl_tests().empty());
  CHECK(c.count_stops() == 3);
  const auto& r = c.policy->result();
  CHECK(r.nccl.skipped.find("no host that is up has a GPU") == 0);
  CHECK(check_exit_code(r) == 0);
}

TEST_CASE("check --nccl: a host that never answers is named at the timeout") {
  FakeCheck c(3, 5000, false, true);
  c.through_matrix({1, 0, 1});
  c.nccl_report(0, {std::string(proto::kNcclUniqueIdBytes, 'x'), "2.27.3", "", {}});
  c.nccl_report(0, {"", "2.27.3", "", {{8, 1}, {1024, 2}}});
  c.take(c.policy->on_timer(CheckTimer::nccl));
  CHECK(c.policy->result().nccl.error == "no answer within 180 s from h2");
  CHECK(c.count_stops() == 3);
}

// A fleet past net::ProbeRounds' threshold, with one address every host
// reaches and one that only node 0 does: the check probes as a job would.
TEST_CASE("check of a big fleet: the probe goes in rounds within the window, as a job's does") {
  const int n = 300;  // rounds from net::ProbeRounds::kRoundsFromNodes (256) on
  FakeCheck c(n, 5000, false);
  for (int i = 0; i < n; ++i) c.join(i);
  for (int i = 0; i < n; ++i) c.facts(i, 1'000'200);
  std::size_t seen = 0;
  auto probes = c.sent_since<proto::Probe>(seen);
  // Only the scouts first, each asked for every address: not every host's
  // connection to every address at node 0's listener at once.
  CHECK(probes.size() == net::ProbeRounds::kScouts);
  for (const auto& [node, probe] : probes) CHECK(probe.addresses.size() == 2);
  for (const auto& [node, probe] : probes) {
    proto::ProbeReport report;
    for (const auto& address : probe.addresses) {
      const bool ok = address == "198.18.1.10" || node == 0;
      report.outcomes.push_back(
          {ok, ok ? 300 : 0, "ens" + std::to_string(node), ok ? "" : "timed out"});
    }
    c.take(c.policy->on_message(FakeCheck::conn(node), report, 0));
  }
  // Then everyone else, for the scouts' choice alone, within the window.
  std::size_t connections = 0, answered = 0;
  for (int wave = 0; wave < 10 && !c.policy->result().master_chosen; ++wave) {
    probes = c.sent_since<proto::Probe>(seen);
    if (probes.empty()) break;
    for (const auto& [node, probe] : probes) {
      REQUIRE(probe.addresses == std::vector<std::string>{"198.18.1.10"});
      connections += probe.addresses.size();
    }
    CHECK(probes.size() <= MasterProbe::kConnectionsInFlight);
    for (const auto& [node, probe] : probes) {
      proto::ProbeReport report;
      report.outcomes.push_back({true, 300, "ens" + std::to_string(node), ""});
      c.take(c.policy->on_message(FakeCheck::conn(node), report, 0));
      ++answered;
    }
  }
  CHECK(answered == n - net::ProbeRounds::kScouts);
  CHECK(connections == n - net::ProbeRounds::kScouts);
  const auto& r = c.policy->result();
  CHECK(r.master_chosen);
  CHECK(r.master_addr == "198.18.1.10");
}

TEST_CASE("check: a host lost while the others probe is waited for no more") {
  FakeCheck c(3);
  for (int i = 0; i < 3; ++i) c.join(i);
  for (int i = 0; i < 3; ++i) c.facts(i, 1'000'200);
  c.probe_report(0, {{"198.19.1.0", true}, {"198.18.1.10", true}});
  c.probe_report(1, {{"198.18.1.10", true}});
  c.take(c.policy->on_connection_closed(FakeCheck::conn(2), "reset by peer"));
  // The MASTER_ADDR choice is made among the hosts that are up, at once.
  const auto& r = c.policy->result();
  CHECK(r.master_chosen);
  CHECK(r.master_addr == "198.18.1.10");
  CHECK_FALSE(r.hosts[2].up);
  CHECK(r.hosts[2].error.find("reset by peer") != std::string::npos);
}
