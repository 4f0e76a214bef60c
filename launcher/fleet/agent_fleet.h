// The I/O of a run of agents, under the one runner (fleet_runner.h): the
// rendezvous service, held by this process or, when the agents' connections
// do not fit under its descriptor limit (descriptor_budget.h), by relay
// processes; one agent per planned node, started through the transports, with
// what its stderr says; SIGINT and SIGTERM. What the agents are for, and every
// decision, stays with the runner's driver and its policy.
#pragma once

#include <asio.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "launcher/fleet/agent_stderr.h"
#include "launcher/plan/launch_spec_builder.h"
#include "launcher/plan/plan.h"
#include "launcher/transport/transport.h"
#include "rendezvous/service.h"

namespace dlaunch {

class AgentFleet {
 public:
  // Tests: a rendezvous service of their own instead of a listening one.
  using ServiceFactory =
      std::function<std::unique_ptr<RendezvousService>(RendezvousService::Callbacks)>;
  struct Settings {
    std::string bind;  // the rendezvous's address and port (0: any free one)
    int port = 0;
    std::string secret;
    std::chrono::seconds heartbeat_timeout{15};
    std::size_t nnodes = 0;
    // 0: this process holds every agent's connection, up to sessions_each
    // connections in all (0: no limit); else this many relay processes, up to
    // sessions_each each.
    std::size_t relays = 0;
    std::size_t sessions_each = 0;
    ServiceFactory service = {};
    // Where a port given but in use is chosen anew, for the error.
    std::string port_chosen_by = "--rdzv-port";
  };
  struct Agent {
    PlannedNode plan;
    std::unique_ptr<AgentHandle> handle;  // null for nodes that start their own agent
    AgentStderr diagnostics;
  };

  // `transports` must outlive the fleet (the agents' handles point into them).
  AgentFleet(asio::io_context& io, AgentTransports& transports, Settings settings);
  ~AgentFleet();

  // The error says where it could not listen, and why.
  Result<void> listen(RendezvousService::Callbacks callbacks);
  // Starts `planned`'s agent; `make_stdin` builds its launch spec once the
  // transport knows this machine's address as the host sees it.
  // `launch`: the agent binary and the job it serves.
  void start_agent(const PlannedNode& planned,
                   std::function<std::string(const std::string& local_address)> make_stdin,
                   AgentLaunch launch, AgentEvents events);
  // Calls `on_signal` for every SIGINT and SIGTERM until stop().
  void watch_signals(std::function<void(int)> on_signal);
  // Stops listening, closes every agent's connection and stops watching signals.
  void stop();

  // Where an agent reaches this fleet's rendezvous, with its secret:
  // `rdzv_connect` (the plan's address for every agent), else `local_address`
  // (this machine as the agent's transport sees it).
  LaunchContext launch_context(const std::string& rdzv_connect,
                               const std::string& local_address) const;

  RendezvousService& server() { return *server_; }
  Agent& agent(int node) { return agents_[static_cast<std::size_t>(node)]; }
  std::vector<Agent>& agents() { return agents_; }  // by node rank
  // Whether an agent runs on this machine (its orphans are ours to end).
  bool any_local() const;

 private:
  void next_signal();

  asio::io_context& io_;
  AgentTransports& transports_;
  Settings s_;
  std::unique_ptr<RendezvousService> server_;
  std::vector<Agent> agents_;  // by node rank
  asio::signal_set signals_;
  std::function<void(int)> on_signal_;
};

}  // namespace dlaunch
