// The real Coordinator (AgentFleet, PolicyTimers, the dispatch of every event,
// the log sink) over a FakeTransport and a rendezvous service whose agents run
// their ranks as told: whole jobs of a thousand nodes in one process.
#include "launcher/job/coordinator.h"

#include <doctest/doctest.h>

#include <map>
#include <set>

#include "launcher/transport/fake_transport.h"
#include "protocol/launch_spec.h"
#include "tests/unit/launcher/fleet/fake_agent_service.h"

using namespace dlaunch;

namespace {

// Every node's agent. On Assign its ranks run: rank 0 prints a line, each
// rank exits with its code (0 unless told otherwise), and the agent reports it
// is done; on Stop it closes and its process exits.
class FakeAgents : public dlaunch::testing::FakeAgentService {
 public:
  FakeAgents(asio::io_context& io, Callbacks callbacks, FakeTransport*& transport,
             std::map<int, int> rank_codes)
      : FakeAgentService(io, std::move(callbacks)),
        transport_(transport),
        rank_codes_(std::move(rank_codes)) {}

  int world_size = 0;
  std::map<int, int> stop_codes;
  std::set<int> stopped_nodes;  // the nodes a Stop was sent to

 protected:
  void on_send(ConnId id, const proto::Message& message) override {
    if (const auto* probe = std::get_if<proto::Probe>(&message)) {
      reach_all(id, *probe);
    } else if (const auto* assign = std::get_if<proto::Assign>(&message)) {
      world_size = assign->world_size;
      for (int r = 0; r < assign->local_world_size; ++r) {
        const int rank = assign->rank_offset + r;
        if (rank == 0) {
          proto::LogLine line;
          line.rank = 0;
          line.text = "hello from rank 0 of " + std::to_string(assign->world_size);
          answer(id, line);
        }
        proto::RankExit exit;
        exit.rank = rank;
        exit.exit_code = rank_codes_.count(rank) ? rank_codes_.at(rank) : 0;
        answer(id, exit);
      }
      answer(id, proto::AgentDone{assign->round, 0});
    } else if (const auto* stop = std::get_if<proto::Stop>(&message)) {
      stop_codes[stop->exit_code]++;
      stopped_nodes.insert(node(id));
      close_then(id, [this, id] { transport_->exit(static_cast<std::size_t>(node(id)), 0); });
    }
  }

 private:
  FakeTransport*& transport_;
  std::map<int, int> rank_codes_;
};

struct RunnerJob {
  RunnerJob(int nodes, int nproc, std::map<int, int> rank_codes = {})
      : transports(dlaunch::testing::fake_remote_transports(fake)), sink([] {
          LogSink::Settings s;
          s.quiet = true;  // nothing on the test's terminal
          return s;
        }()) {
    Coordinator::Settings s;
    s.plan = dlaunch::testing::remote_hosts_plan(nodes, "unit-job", nproc);
    s.plan.command = {"train"};
    s.plan.probe_master = true;
    s.service = [this, nodes, nproc, rank_codes](RendezvousService::Callbacks callbacks) {
      auto service = std::make_unique<FakeAgents>(io, std::move(callbacks), fake, rank_codes);
      agents = service.get();
      for (int n = 0; n < nodes; ++n) agents->join(n, nproc);
      return std::unique_ptr<RendezvousService>(std::move(service));
    };
    coordinator.emplace(io, std::move(s), transports, sink);
  }

  asio::io_context io;
  FakeTransport* fake = nullptr;
  FakeAgents* agents = nullptr;
  AgentTransports transports;
  LogSink sink;
  std::optional<Coordinator> coordinator;
};

}  // namespace

TEST_CASE("coordinator: a 1,000-node job joins, runs every rank, exits 0, and stops every agent") {
  const int nodes = 1000;
  RunnerJob job(nodes, 2);
  CHECK(job.coordinator->run() == 0);
  REQUIRE(job.fake != nullptr);
  CHECK(job.fake->started() == static_cast<std::size_t>(nodes));
  CHECK(job.agents->sent_of<proto::Assign>() == nodes);
  CHECK(job.agents->world_size == 2 * nodes);
  CHECK(job.agents->sent_of<proto::Stop>() == nodes);
  CHECK(job.agents->stop_codes == std::map<int, int>{{0, nodes}});
  CHECK(job.agents->stopped_nodes.size() == static_cast<std::size_t>(nodes));  // each once
  // Each agent got its own launch spec (8 bytes of magic and length, then
  // the fields): its node rank and its host's name.
  for (int n = 0; n < nodes; n += 111) {
    const auto& bytes = job.fake->agent(static_cast<std::size_t>(n)).spec_bytes;
    REQUIRE(bytes.size() > 8);
    const auto spec = decode_launch_spec_body(std::string_view(bytes).substr(8));
    REQUIRE(spec.has_value());
    CHECK(spec->node_rank == n);
    CHECK(spec->host_name == job.fake->agent(static_cast<std::size_t>(n)).host.name);
  }
  CHECK(job.agents->stopped);
  // Rank 0's line went through the sink: the failure summary's tail has it.
  const auto tail = job.sink.tail(0);
  REQUIRE(tail.size() == 1);
  CHECK(tail[0].find("hello from rank 0 of 2000") != std::string::npos);
  CHECK(job.coordinator->result().exit_code == 0);
}

TEST_CASE("coordinator: one failing rank of a 1,000-node job is the job's exit code, told to all") {
  const int nodes = 1000;
  RunnerJob job(nodes, 1, {{617, 3}});
  CHECK(job.coordinator->run() == 3);
  CHECK(job.agents->sent_of<proto::Stop>() == nodes);
  // Every node's Stop carries the job's code, 3, not only one of them.
  CHECK(job.agents->stop_codes == std::map<int, int>{{3, nodes}});
  const auto& result = job.coordinator->result();
  CHECK(result.exit_code == 3);
  CHECK(result.root_cause.find("617") != std::string::npos);
}
