// The real CheckRunner wiring (AgentFleet, PolicyTimers, the dispatch of every
// event and action) over a FakeTransport and a rendezvous service whose agents
// answer as healthy ones do: whole checks of hundreds of hosts in one process.
#include "launcher/check/check_runner.h"

#include <doctest/doctest.h>

#include <map>
#include <set>

#include "launcher/transport/fake_transport.h"

using namespace dlaunch;

namespace {

// Plays every host's agent behind the rendezvous: each answer is posted to
// the io_context, so it arrives as the next event, as from a socket.
class FakeAgents : public RendezvousService {
 public:
  FakeAgents(asio::io_context& io, Callbacks callbacks, FakeTransport*& transport,
             std::set<int> silent)
      : io_(io), callbacks_(std::move(callbacks)), transport_(transport), silent_(silent) {}

  static ConnId conn(int node) { return 500 + static_cast<ConnId>(node); }
  static int node(ConnId conn) { return static_cast<int>(conn - 500); }

  // Every agent but the silent ones joins.
  void join_all(int nodes) {
    for (int n = 0; n < nodes; ++n) {
      if (silent_.count(n)) continue;
      proto::Join join;
      join.node_rank = n;
      join.host = "h" + std::to_string(n);
      join.probe_port = 40000;
      join.interfaces = {
          {"eth0",
           net::InterfaceKind::physical,
           1500,
           true,
           {{"198.18." + std::to_string(n / 250) + "." + std::to_string(n % 250 + 1), 16, false}}}};
      asio::post(io_, [this, n, join] { callbacks_.on_join(conn(n), join); });
    }
  }

  std::uint16_t port() const override { return 29400; }
  void send(ConnId id, const proto::Message& message) override {
    ++sent[message.index()];
    if (std::holds_alternative<proto::FactsRequest>(message)) {
      proto::HostFacts facts;
      facts.cpus = 8;
      facts.shm_size = 8LL << 30;
      facts.python_version = "3.11.2";
      facts.torch_version = "2.4.0";
      answer(id, facts);
    } else if (const auto* probe = std::get_if<proto::Probe>(&message)) {
      probe_connections += probe->addresses.size();
      proto::ProbeReport report;
      for (std::size_t i = 0; i < probe->addresses.size(); ++i)
        report.outcomes.push_back({true, 200, "eth0", ""});
      answer(id, report);
    } else if (const auto* test = std::get_if<proto::PeerTest>(&message)) {
      proto::PeerTestReport report;
      report.round = test->round;
      for (const auto& t : test->targets)
        report.results.push_back({t.node, true, 300, 1000, 1000, ""});
      answer(id, report);
    } else if (std::holds_alternative<proto::Stop>(message)) {
      asio::post(io_, [this, id] {
        callbacks_.on_close(id, "closed by the agent");
        transport_->exit(static_cast<std::size_t>(node(id)), 0);
      });
    }
  }
  void close(ConnId id, const std::string&) override {
    asio::post(io_, [this, id] { callbacks_.on_close(id, "closed"); });
  }
  bool output_full(ConnId) const override { return false; }
  void on_output_space(ConnId, std::function<void()>) override {}
  void set_reading_paused(bool) override {}
  void stop() override { stopped = true; }

  std::map<std::size_t, int> sent;  // by message type
  std::size_t probe_connections = 0;
  bool stopped = false;

 private:
  void answer(ConnId id, proto::Message message) {
    asio::post(io_, [this, id, message = std::move(message)]() mutable {
      callbacks_.on_message(id, std::move(message));
    });
  }

  asio::io_context& io_;
  Callbacks callbacks_;
  FakeTransport*& transport_;
  std::set<int> silent_;
};

struct RunnerCheck {
  explicit RunnerCheck(int nodes, bool facts_only = false, std::set<int> silent = {})
      : transports([] { return std::unique_ptr<Transport>(); },
                   [this] {
                     auto t = std::make_unique<FakeTransport>();
                     fake = t.get();
                     return std::unique_ptr<Transport>(std::move(t));
                   }) {
    CheckRunner::Settings s;
    s.plan.mode = Mode::hosts;
    s.plan.job = "check";
    s.plan.nnodes = nodes;
    s.plan.rdzv_bind = "127.0.0.1";
    for (int n = 0; n < nodes; ++n) {
      PlannedNode planned;
      planned.node_rank = n;
      planned.host.name = "h" + std::to_string(n);
      // Management addresses; the agents report their 198.18 ones.
      planned.host.address =
          "198.19." + std::to_string(n / 250) + "." + std::to_string(n % 250 + 1);
      planned.local = false;
      s.plan.nodes.push_back(planned);
      s.policy.hosts.push_back({planned.host.name, planned.host.address});
    }
    s.plan.node0_address = s.plan.nodes[0].host.address;
    s.policy.master_sources.node0_address = s.plan.node0_address;
    s.policy.facts_only = facts_only;
    s.policy.join_timeout = std::chrono::seconds(5);
    s.policy.matrix_budget = std::chrono::milliseconds(0);
    s.policy.shortest_round = s.policy.longest_round = std::chrono::milliseconds(0);
    s.policy.stop_grace = std::chrono::milliseconds(0);  // a silent agent is killed at once
    s.service = [this, nodes, silent](RendezvousService::Callbacks callbacks) {
      auto service = std::make_unique<FakeAgents>(io, std::move(callbacks), fake, silent);
      agents = service.get();
      agents->join_all(nodes);
      return std::unique_ptr<RendezvousService>(std::move(service));
    };
    runner.emplace(io, std::move(s), transports);
  }

  asio::io_context io;
  FakeTransport* fake = nullptr;
  FakeAgents* agents = nullptr;
  AgentTransports transports;
  std::optional<CheckRunner> runner;
};

std::size_t type_of(const proto::Message& m) {
  return m.index();
}

}  // namespace

TEST_CASE("check runner: 300 hosts, every one up, the probe in rounds, every pair, nothing left") {
  const int n = 300;
  RunnerCheck c(n);
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
  // Every agent was told to stop and exited; the service was stopped.
  CHECK(c.agents->sent[type_of(proto::Stop{})] == n);
  for (int i = 0; i < n; ++i) CHECK(c.fake->agent(static_cast<std::size_t>(i)).exited);
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
  CHECK(c.agents->sent[type_of(proto::PeerTest{})] == 0);
  CHECK(c.agents->sent[type_of(proto::FactsRequest{})] == n);
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
