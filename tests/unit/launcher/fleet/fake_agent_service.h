// A rendezvous service for the runners' unit tests (check_runner_test,
// coordinator_test): the agents behind it are the test's. A subclass answers
// what the runner sends (on_send); answers, joins and closes are posted to
// the io_context, so each arrives as the next event, as from a socket.
#pragma once

#include <asio.hpp>
#include <cstddef>
#include <map>
#include <string>
#include <utility>

#include "protocol/messages.h"
#include "rendezvous/service.h"

namespace dlaunch::testing {

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
    asio::post(io_, [this, node, join] { callbacks_.on_join(conn(node), join); });
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
  // The agent's connection closes, then `then` runs (its process exits).
  template <class Then>
  void close_then(ConnId id, Then then) {
    asio::post(io_, [this, id, then] {
      callbacks_.on_close(id, "closed by the agent");
      then();
    });
  }

  std::uint16_t port() const override { return 29400; }
  void send(ConnId id, const proto::Message& message) override {
    ++sent[message.index()];
    on_send(id, message);
  }
  void close(ConnId id, const std::string&) override {
    asio::post(io_, [this, id] { callbacks_.on_close(id, "closed"); });
  }
  bool output_full(ConnId) const override { return false; }
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
};

}  // namespace dlaunch::testing
