// Runs `dlaunch check`: the rendezvous server, one check-mode agent per host
// through the transports (as a job starts them), and CheckPolicy's actions
// carried out on one io_context.
#pragma once

#include <asio.hpp>
#include <memory>
#include <string>
#include <vector>

#include "launcher/check/check_policy.h"
#include "launcher/config/options.h"
#include "launcher/fleet/agent_stderr.h"
#include "launcher/plan/plan.h"
#include "launcher/transport/transport.h"
#include "rendezvous/server.h"

namespace dlaunch {

class CheckRunner {
 public:
  struct Settings {
    Plan plan;
    Options options;
    std::string secret;
    std::string agent_binary;
    CheckPolicy::Config policy;
  };

  // `transports` must outlive the runner.
  CheckRunner(asio::io_context& io, Settings settings, AgentTransports& transports);
  ~CheckRunner();

  // Runs to the end; false when the rendezvous could not listen (said on the console).
  bool run();
  const CheckResult& result() const { return policy_.result(); }

 private:
  struct Agent {
    PlannedNode plan;
    std::unique_ptr<AgentHandle> handle;
    AgentStderr diagnostics;
  };

  void start_agent(const PlannedNode& planned);
  void apply(const CheckActions& actions);
  void perform(const check_action::ArmTimer& a);
  void perform(const check_action::Finish& a);
  asio::steady_timer& timer(CheckTimer which);
  void watch_signals();

  asio::io_context& io_;
  Settings s_;
  AgentTransports& transports_;
  CheckPolicy policy_;
  std::unique_ptr<RendezvousServer> server_;
  std::vector<Agent> agents_;
  asio::signal_set signals_;
  asio::steady_timer join_timer_;
  asio::steady_timer probe_timer_;
  asio::steady_timer round_timer_;
  asio::steady_timer nccl_timer_;
  asio::steady_timer stop_timer_;
};

}  // namespace dlaunch
