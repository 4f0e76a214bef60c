// What the runners' unit tests (check_runner_test, coordinator_test) run a
// whole fleet over: a plan of remote hosts, transports whose remote one is a
// FakeTransport, and a rendezvous service whose agents are the test's. A
// subclass answers what the runner sends (on_send); answers, joins and closes
// are posted to the io_context, so each arrives as the next event, as from a
// socket.
#pragma once

#include <asio.hpp>
#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "launcher/plan/plan.h"
#include "launcher/transport/fake_transport.h"
#include "protocol/messages.h"
#include "rendezvous/service.h"

namespace dlaunch::testing {

// Hosts h0.. started over the remote transport, listed by their management
// addresses (198.19.x.y); their agents report 198.18 ones (FakeAgentService::join).
inline Plan remote_hosts_plan(int nodes, const std::string& job, int nproc = 0) {
  Plan plan;
  plan.mode = Mode::hosts;
  plan.job = job;
  plan.nnodes = nodes;
  plan.rdzv_bind = "127.0.0.1";
  for (int n = 0; n < nodes; ++n) {
    PlannedNode planned;
    planned.node_rank = n;
    planned.host.name = "h" + std::to_string(n);
    planned.host.address = "198.19." + std::to_string(n / 250) + "." + std::to_string(n % 250 + 1);
    planned.local = false;
    planned.nproc = nproc;
    plan.nodes.push_back(planned);
  }
  if (nodes > 0) plan.node0_address = plan.nodes[0].host.address;
  return plan;
}

// Transports whose remote one is a FakeTransport, made on first use; `fake`
// then points at it.
inline AgentTransports fake_remote_transports(FakeTransport*& fake) {
  return AgentTransports([] { return std::unique_ptr<Transport>(); },
                         [&fake] {
                           auto t = std::make_unique<FakeTransport>();
                           fake = t.get();
                           return std::unique_ptr<Transport>(std::move(t));
                         });
}

class FakeAgentService : public RendezvousService {
 public:
  FakeAgentService(asio::io_context& io, Callbacks callbacks)
      : io_(io), callbacks_(std::move(callbacks)) {}

  static ConnId conn(int node) { return 500 + static_cast<ConnId>(node); }
  static int node(ConnId conn) { return static_cast<int>(conn - 500); }

  // Node `node`'s agent joins with `nproc` ranks and one interface, eth0 with a
  // 198.18 address (the hosts' management addresses are elsewhere).
  void join(int node, int nproc = 1) {
    proto::Join join;
    join.node_rank = node;
    join.nproc = nproc;
    join.host = "h" + std::to_string(node);
    join.master_port = 29500;
    join.probe_port = 29501;
    join.pid = 10'000 + node;
    join.interfaces = {
        {"eth0",
         net::InterfaceKind::physical,
         1500,
         true,
         {{"198.18." + std::to_string(node / 250) + "." + std::to_string(node % 250 + 1), 16,
           false}}}};
    join_as(node, std::move(join));
  }
  // Node `node`'s agent joins with exactly this Join. As the real server
  // (rendezvous/server.cpp): only a connection's first Join is one; a later
  // one on a joined connection is just a message.
  void join_as(int node, proto::Join join) {
    asio::post(io_, [this, node, join = std::move(join)] {
      if (joined_conns_.insert(conn(node)).second) {
        callbacks_.on_join(conn(node), join);
      } else {
        callbacks_.on_message(conn(node), proto::Message(join));
      }
    });
  }
  void answer(ConnId id, proto::Message message) {
    asio::post(io_, [this, id, message = std::move(message)]() mutable {
      callbacks_.on_message(id, std::move(message));
    });
  }
  // Every address of the probe reached, on eth0.
  void reach_all(ConnId id, const proto::Probe& probe) {
    probe_connections += probe.addresses.size();
    proto::ProbeReport report;
    for (std::size_t i = 0; i < probe.addresses.size(); ++i)
      report.outcomes.push_back({true, 200, "eth0", ""});
    answer(id, report);
  }
  // The agent's connection closes for `reason` (a reset, a heartbeat timeout).
  void lose(ConnId id, std::string reason) {
    asio::post(io_, [this, id, reason = std::move(reason)] {
      joined_conns_.erase(id);
      callbacks_.on_close(id, reason);
    });
  }
  // The agent's connection closes, then `then` runs (its process exits).
  template <class Then>
  void close_then(ConnId id, Then then) {
    asio::post(io_, [this, id, then] {
      joined_conns_.erase(id);
      callbacks_.on_close(id, "closed by the agent");
      then();
    });
  }

  std::uint16_t port() const override { return 29400; }
  void send(ConnId id, const proto::Message& message) override {
    ++sent[message.index()];
    on_send(id, message);
  }
  // As the real server: closing a connection it does not hold (never
  // joined, or closed already) does nothing; one it holds closes once.
  void close(ConnId id, const std::string&) override {
    asio::post(io_, [this, id] {
      if (joined_conns_.erase(id) == 0) return;
      callbacks_.on_close(id, "closed");
    });
  }
  // As the real server: a connection it does not hold takes nothing more.
  bool output_full(ConnId id) const override { return !joined_conns_.contains(id); }
  void on_output_space(ConnId, std::function<void()>) override {}
  void set_reading_paused(bool) override {}
  void stop() override { stopped = true; }

  // How many messages of each type were sent (by variant index).
  template <class M>
  int sent_of() const {
    auto it = sent.find(proto::Message(M{}).index());
    return it == sent.end() ? 0 : it->second;
  }

  std::map<std::size_t, int> sent;
  std::size_t probe_connections = 0;
  bool stopped = false;

 protected:
  virtual void on_send(ConnId id, const proto::Message& message) = 0;

 private:
  asio::io_context& io_;
  Callbacks callbacks_;
  std::set<ConnId> joined_conns_;  // connections whose Join was on_join
};

}  // namespace dlaunch::testing
