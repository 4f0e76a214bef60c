// The I/O of a run of agents, the same for a job (job/coordinator) and for
// `dlaunch check` (check/check_runner): the rendezvous service, held by this
// process or, when the agents' connections do not fit under its descriptor
// limit (descriptor_budget.h), by relay processes; one agent per planned node,
// started through the transports, with what its stderr says; SIGINT and
// SIGTERM; and the policy's agent_link actions carried out. What the agents
// are for, and every decision, stays with the caller and its policy.
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

#include "common/clock.h"
#include "common/result.h"
#include "launcher/fleet/agent_link_perform.h"
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
  void start_agent(const PlannedNode& planned,
                   std::function<std::string(const std::string& local_address)> make_stdin,
                   const std::string& agent_binary, AgentEvents events);
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
  // Whether an agent runs on this machine (its orphans are ours to end).
  bool any_local() const;

  // Carries out a policy's actions in order: those on an agent's link here,
  // every other kind by `runner_perform` (the runner's own: timers, the end).
  template <class Actions, class RunnerPerform>
  void apply(const Actions& actions, RunnerPerform&& runner_perform) {
    for (const auto& action : actions) {
      std::visit(
          [&](const auto& a) {
            if constexpr (agent_link::is_action<std::decay_t<decltype(a)>>) {
              agent_link::perform(*server_, agents_, a);
            } else {
              runner_perform(a);
            }
          },
          action);
    }
  }

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

// A policy's named timers (an enum of Count values) on one io_context: arming
// one again replaces its deadline, and a cancelled or replaced wait never calls
// back. On common/clock.h's clock, which a unit test can move; the test reads
// what is armed with time_left and expiries.
template <class Which, std::size_t Count>
class PolicyTimers {
 public:
  explicit PolicyTimers(asio::io_context& io) {
    for (std::size_t i = 0; i < Count; ++i) timers_.push_back(std::make_unique<One>(io));
  }
  void arm(Which which, std::chrono::milliseconds after, std::function<void()> on_expiry) {
    auto& one = *timers_[static_cast<std::size_t>(which)];
    one.timer.expires_after(after);
    one.armed = true;
    const auto generation = ++one.generation;
    // A wait that had completed but not yet called back when it was replaced
    // or cancelled ends here: only the latest arming's wait may call back.
    one.timer.async_wait(
        [&one, generation, on_expiry = std::move(on_expiry)](const asio::error_code& ec) {
          if (ec || generation != one.generation) return;
          one.armed = false;
          ++one.expiries;
          on_expiry();
        });
  }
  void cancel(Which which) {
    auto& one = *timers_[static_cast<std::size_t>(which)];
    one.timer.cancel();
    one.armed = false;
    ++one.generation;
  }
  void cancel_all() {
    for (std::size_t i = 0; i < Count; ++i) cancel(static_cast<Which>(i));
  }
  // How long until `which` fires; nullopt when it is not armed.
  std::optional<std::chrono::milliseconds> time_left(Which which) const {
    const auto& one = *timers_[static_cast<std::size_t>(which)];
    if (!one.armed) return std::nullopt;
    return std::chrono::duration_cast<std::chrono::milliseconds>(one.timer.expiry() -
                                                                 SteadyClock::now());
  }
  // How many times `which` has fired.
  std::uint64_t expiries(Which which) const {
    return timers_[static_cast<std::size_t>(which)]->expiries;
  }

 private:
  struct One {
    explicit One(asio::io_context& io) : timer(io) {}
    Timer timer;
    bool armed = false;
    std::uint64_t generation = 0;  // of the latest arm or cancel
    std::uint64_t expiries = 0;
  };
  std::vector<std::unique_ptr<One>> timers_;
};

}  // namespace dlaunch
