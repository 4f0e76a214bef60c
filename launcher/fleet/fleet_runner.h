// The one runner of every command that drives agents: a job
// (job/coordinator) and `dlaunch check` (check/check_runner). It owns what
// is the same for both, as Asio's HTTP server owns its acceptor and signals:
// SIGHUP and SIGPIPE ignored, orphans of local agents adopted, SIGINT and
// SIGTERM watched, the rendezvous listening (fleet/agent_fleet.h), one agent
// started per planned node with what its stderr says, the policy's timers, its
// agent_link actions carried out, the io loop, and the end (local orphans
// ended). What is specific to a command, its policy and what that policy's
// events and other actions mean, is its Driver.
#pragma once

#include <asio.hpp>
#include <cstddef>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>

#include "common/result.h"
#include "launcher/config/options.h"
#include "launcher/fleet/agent_fleet.h"
#include "launcher/fleet/agent_link.h"
#include "launcher/fleet/agent_link_perform.h"
#include "launcher/fleet/policy_timers.h"
#include "launcher/plan/launch_spec_builder.h"
#include "launcher/plan/plan.h"
#include "launcher/transport/transport.h"
#include "protocol/launch_spec.h"
#include "protocol/messages.h"

namespace dlaunch {

class FleetRunner {
 public:
  // What every run of agents is given.
  struct Settings {
    Plan plan;
    Options options;
    std::string secret;
    std::string agent_binary;
    // More agents than this process may hold connections (descriptor_budget):
    // this many relay processes hold them, up to sessions_each each. Without
    // relays, the connections this process holds at most (0: no limit).
    std::size_t rendezvous_relays = 0;
    std::size_t sessions_each = 0;
    AgentFleet::ServiceFactory service = {};  // tests: instead of listening
  };

  // The variable part: a command's policy, fed the run's events.
  class Driver {
   public:
    virtual ~Driver() = default;
    virtual void on_join(ConnId conn, const proto::Join& join) = 0;
    virtual void on_message(ConnId conn, proto::Message&& message) = 0;
    virtual void on_connection_closed(ConnId conn, const std::string& reason) = 0;
    // SIGINT and SIGTERM.
    virtual void on_signal(int signal) = 0;
    // A timer the policy armed (its enum's value) has fired.
    virtual void on_timer(std::size_t which) = 0;
    // The launch spec of `planned`'s agent; `context`: where it reaches the
    // rendezvous, with the secret.
    virtual LaunchSpec launch_spec(const PlannedNode& planned, const LaunchContext& context) = 0;
    // The name of a node in prefixes and messages.
    virtual std::string node_label(int node) const = 0;
    // A node's agent said on stderr that it cannot reach the rendezvous.
    virtual void on_agent_unreachable(int /*node*/, std::string /*what*/) {}
    // A node's agent is gone, or never started: `error` says why when it is
    // not an ordinary exit; `diagnostics`: what its stderr said.
    virtual void on_agent_exited(int node, int exit_code, const std::string& error,
                                 const AgentStderr& diagnostics) = 0;
    // The rendezvous listens; the agents are not started yet.
    virtual void on_listening() {}
    // The policy's Finish, before the runner stops the timers, links and loop.
    virtual void on_finish() {}
  };

  // `transports` must outlive the runner (the agents' handles point into
  // them); `port_chosen_by`: where a port in use is chosen anew, for the error.
  FleetRunner(asio::io_context& io, Settings& settings, AgentTransports& transports, Driver& driver,
              std::string port_chosen_by = "--rdzv-port");

  // Ignores SIGHUP and SIGPIPE, adopts orphans, watches signals, listens and
  // starts every planned node's agent. The error: where it could not listen.
  // The caller then applies its policy's start().
  Result<void> start();
  // The io loop, until the policy's Finish (or nothing is left to do).
  void run() { io_.run(); }
  // After the loop: orphans of killed local agents were re-parented to this
  // process (a subreaper), and end with it.
  void end();

  // Carries out a policy's actions in order: the agents' links here, timers
  // and Finish here, every other kind by `driver_perform`.
  template <class Actions, class DriverPerform>
  void apply(const Actions& actions, DriverPerform&& driver_perform) {
    for (const auto& action : actions) {
      std::visit(
          [&](const auto& a) {
            using A = std::decay_t<decltype(a)>;
            if constexpr (agent_link::is_action<A>) {
              agent_link::perform(fleet_.server(), fleet_.agents(), a);
            } else if constexpr (agent_link::is_arm_timer<A>) {
              arm(static_cast<std::size_t>(a.timer), a.after);
            } else if constexpr (agent_link::is_cancel_timer<A>) {
              timers_.cancel(a.timer);
            } else if constexpr (std::is_same_v<A, agent_link::Finish>) {
              finish();
            } else {
              driver_perform(a);
            }
          },
          action);
    }
  }

  AgentFleet& fleet() { return fleet_; }
  RendezvousService& server() { return fleet_.server(); }
  const PolicyTimers& timers() const { return timers_; }
  // The plan as run: its rendezvous address resolved for the agents.
  const Plan& plan() const { return s_.plan; }

 private:
  void start_agent(const PlannedNode& planned);
  void arm(std::size_t which, std::chrono::milliseconds after);
  void finish();

  asio::io_context& io_;
  Settings& s_;
  Driver& driver_;
  AgentFleet fleet_;
  PolicyTimers timers_;
  std::string workdir_;  // where local ranks start; once, not per node
};

}  // namespace dlaunch
