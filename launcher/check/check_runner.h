// Runs `dlaunch check`: one check-mode agent per host, started and connected
// exactly as a job's (fleet/agent_fleet.h: the same transports, and relays
// past the descriptor limit), and CheckPolicy's actions carried out on one
// io_context.
#pragma once

#include <asio.hpp>
#include <memory>
#include <string>
#include <vector>

#include "launcher/check/check_policy.h"
#include "launcher/config/options.h"
#include "launcher/fleet/agent_fleet.h"
#include "launcher/plan/plan.h"
#include "launcher/transport/transport.h"

namespace dlaunch {

class CheckRunner {
 public:
  struct Settings {
    Plan plan;
    Options options;
    std::string secret;
    std::string agent_binary;
    CheckPolicy::Config policy;
    // More agents than this process may hold connections (descriptor_budget.h);
    // as the coordinator's (coordinator.h).
    std::size_t rendezvous_relays = 0;
    std::size_t sessions_each = 0;
    AgentFleet::ServiceFactory service = {};  // tests: instead of listening
  };

  // `transports` must outlive the runner.
  CheckRunner(asio::io_context& io, Settings settings, AgentTransports& transports);
  ~CheckRunner();

  // Runs to the end; false when the rendezvous could not listen (said on the console).
  bool run();
  const CheckResult& result() const { return policy_.result(); }

 private:
  void start_agent(const PlannedNode& planned);
  void apply(const CheckActions& actions);
  void perform(const check_action::ArmTimer& a);
  void perform(const check_action::Finish& a);

  asio::io_context& io_;
  Settings s_;
  CheckPolicy policy_;
  AgentFleet fleet_;
  PolicyTimers<CheckTimer, kCheckTimers> timers_;
};

}  // namespace dlaunch
