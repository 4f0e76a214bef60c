// The real CheckRunner wiring (AgentFleet, PolicyTimers, the dispatch of every
// event and action) over a FakeTransport and a rendezvous service whose agents
// answer as healthy ones do: whole checks of hundreds of hosts in one process.
#include "launcher/check/check_runner.h"

#include <doctest/doctest.h>

#include <map>
#include <set>

#include "launcher/transport/fake_transport.h"
#include "tests/unit/launcher/fleet/fake_agent_service.h"

using namespace dlaunch;

namespace {

// Every host's agent, healthy: facts, every probe address and every peer reached.
class CheckRunnerAgents : public dlaunch::testing::FakeAgentService {
 public:
  CheckRunnerAgents(asio::io_context& io, Callbacks callbacks, FakeTransport*& transport,
                    std::set<int> silent)
      : FakeAgentService(io, std::move(callbacks)), transport_(transport), silent_(silent) {}

  // Each round's tests: (from, to).
  std::map<std::int32_t, std::vector<std::pair<int, int>>> tests_by_round;
  std::set<int> stopped_nodes;  // the nodes a Stop was sent to

  // Every agent but the silent ones joins.
  void join_all(int nodes) {
    for (int n = 0; n < nodes; ++n)
      if (!silent_.count(n)) join(n);
  }

 protected:
  void on_send(ConnId id, const proto::Message& message) override {
    if (std::holds_alternative<proto::FactsRequest>(message)) {
      proto::HostFacts facts;
      facts.cpus = 8;
      facts.shm_size = 8LL << 30;
      facts.python_version = "3.11.2";
      facts.torch_version = "2.4.0";
      answer(id, facts);
    } else if (const auto* probe = std::get_if<proto::Probe>(&message)) {
      reach_all(id, *probe);
    } else if (const auto* test = std::get_if<proto::PeerTest>(&message)) {
      for (const auto& t : test->targets)
        tests_by_round[test->round].emplace_back(node(id), t.node);
      proto::PeerTestReport report;
      report.round = test->round;
      for (const auto& t : test->targets)
        report.results.push_back({t.node, true, 300, 1000, 1000, ""});
      answer(id, report);
    } else if (std::holds_alternative<proto::Stop>(message)) {
      stopped_nodes.insert(node(id));
      close_then(id, [this, id] { transport_->exit(static_cast<std::size_t>(node(id)), 0); });
    }
  }

 private:
  FakeTransport*& transport_;
  std::set<int> silent_;
};

struct RunnerCheck {
  explicit RunnerCheck(int nodes, bool facts_only = false, std::set<int> silent = {},
                       MatrixPairs pairs = MatrixPairs::automatic)
      : transports(dlaunch::testing::fake_remote_transports(fake)) {
    CheckRunner::Settings s;
    s.plan = dlaunch::testing::remote_hosts_plan(nodes, "check");
    for (const auto& planned : s.plan.nodes)
      s.policy.hosts.push_back({planned.host.name, planned.host.address});
    s.policy.master_sources.node0_address = s.plan.node0_address;
    s.policy.facts_only = facts_only;
    s.policy.matrix_pairs = pairs;
    s.policy.join_timeout = std::chrono::seconds(5);
    s.policy.matrix_budget = std::chrono::milliseconds(0);
    s.policy.shortest_round = s.policy.longest_round = std::chrono::milliseconds(0);
    s.policy.stop_grace = std::chrono::milliseconds(0);  // a silent agent is killed at once
    s.service = [this, nodes, silent](RendezvousService::Callbacks callbacks) {
      auto service = std::make_unique<CheckRunnerAgents>(io, std::move(callbacks), fake, silent);
      agents = service.get();
      agents->join_all(nodes);
      return std::unique_ptr<RendezvousService>(std::move(service));
    };
    runner.emplace(io, std::move(s), transports);
  }

  asio::io_context io;
  FakeTransport* fake = nullptr;
  CheckRunnerAgents* agents = nullptr;
  AgentTransports transports;
  std::optional<CheckRunner> runner;
};

}  // namespace

TEST_CASE("check runner: 300 hosts, every one up, the probe in rounds, every pair, nothing left") {
  const int n = 300;
  RunnerCheck c(n, false, {}, MatrixPairs::all);
  REQUIRE(c.runner->run());
  REQUIRE(c.fake != nullptr);
  CHECK(c.fake->started() == static_cast<std::size_t>(n));
  const auto& r = c.runner->result();
  std::size_t up = 0;
  for (const auto& h : r.hosts) up += h.up ? 1 : 0;
  CHECK(up == static_cast<std::size_t>(n));
  CHECK(r.master_chosen);
  CHECK(r.master_addr == "198.19.0.1");  // node 0's hosts-file address comes first
  // As a job's probe: node 0's two addresses tried by the scouts only, the
  // others trying the scouts' choice alone (before, every host tried both).
  CHECK(c.agents->probe_connections ==
        static_cast<std::size_t>(2 * net::ProbeRounds::kScouts + (n - net::ProbeRounds::kScouts)));
  std::size_t tested = 0;
  for (const auto& p : r.pairs) tested += p.tested && p.result.reached ? 1 : 0;
  CHECK(tested == static_cast<std::size_t>(n * (n - 1)));
  CHECK(launch_problems(r).empty());
  // Every agent was told to stop, each once; the service was stopped.
  CHECK(c.agents->sent_of<proto::Stop>() == n);
  CHECK(c.agents->stopped_nodes.size() == static_cast<std::size_t>(n));
  CHECK(c.agents->stopped);
}

TEST_CASE(
    "check runner: 2,000 hosts, the matrix sampled: every host tested near and far, "
    "each once per round, in a few dozen rounds") {
  const int n = 2000;
  RunnerCheck c(n);
  REQUIRE(c.runner->run());
  const auto& r = c.runner->result();
  CHECK(r.master_chosen);
  CHECK(r.sampled_strides == std::vector<int>{1, 2, 4, 8, 16, 32, 64, 128, 256, 512});
  // Both directions of each sampled pair, every one tested and reached.
  // 10 strides, 1 to 512 (half of 2,000 is 1,000), each pairing every host
  // with the one that far after it, around the list: 2,000 pairs a stride.
  CHECK(r.pairs.size() == 2 * 10 * 2000);
  std::map<int, std::set<int>> partners;
  for (const auto& p : r.pairs) {
    CHECK(p.tested);
    CHECK(p.result.reached);
    partners[p.from].insert(p.to);
  }
  // Each host with the 10 after it and the 10 before it, so 20 others.
  REQUIRE(partners.size() == static_cast<std::size_t>(n));
  for (const auto& [host, others] : partners) CHECK(others.size() == 20);
  CHECK(c.agents->sent_of<proto::PeerTest>() == static_cast<int>(r.pairs.size()));
  // Rounds of disjoint pairs, both ways at once: no host tests or is tested
  // twice in one round; at most 2 * 20 - 1 rounds, against 1,999 for every pair.
  for (const auto& [round, tests] : c.agents->tests_by_round) {
    std::set<int> from, to;
    for (const auto& [a, b] : tests) {
      CHECK(from.insert(a).second);
      CHECK(to.insert(b).second);
    }
  }
  CHECK(c.agents->tests_by_round.size() <= 39);
  CHECK(launch_problems(r).empty());
  CHECK(c.agents->stopped);
}

TEST_CASE("check runner, facts only (top node): 1,000 hosts, no probe, no pairs") {
  const int n = 1000;
  RunnerCheck c(n, true);
  REQUIRE(c.runner->run());
  const auto& r = c.runner->result();
  std::size_t up = 0;
  for (const auto& h : r.hosts) up += h.up && h.facts && h.facts->cpus == 8 ? 1 : 0;
  CHECK(up == static_cast<std::size_t>(n));
  CHECK(c.agents->probe_connections == 0);
  CHECK(c.agents->sent_of<proto::PeerTest>() == 0);
  CHECK(c.agents->sent_of<proto::FactsRequest>() == n);
}

TEST_CASE("check runner: a host whose agent never joins is down at the join timeout, and killed") {
  use_test_clock();
  RunnerCheck c(4, false, {2});
  // Once the three others are up, the clock jumps past the join timeout.
  std::function<void()> wait_then_jump = [&] {
    const auto& hosts = c.runner->result().hosts;
    if (hosts[0].up && hosts[1].up && hosts[3].up) {
      advance_test_clock(std::chrono::seconds(6));
      return;
    }
    asio::post(c.io, wait_then_jump);
  };
  asio::post(c.io, wait_then_jump);
  REQUIRE(c.runner->run());
  const auto& r = c.runner->result();
  CHECK_FALSE(r.hosts[2].up);
  CHECK(r.hosts[2].error.find("did not join within 5 s") != std::string::npos);
  CHECK(c.fake->agent(2).kills >= 1);
  CHECK(r.hosts[0].up);
  CHECK(r.hosts[3].up);
  CHECK(c.runner->result().master_chosen);
}
