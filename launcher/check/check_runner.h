// Runs `dlaunch check`: one check-mode agent per host, on the one runner
// (fleet/fleet_runner.h) that also runs jobs; this driver gives CheckPolicy
// the run's events and says what a check agent's launch spec is.
#pragma once

#include <asio.hpp>
#include <string>

#include "launcher/check/check_policy.h"
#include "launcher/fleet/fleet_runner.h"
#include "launcher/transport/transport.h"

namespace dlaunch {

class CheckRunner : private FleetRunner::Driver {
 public:
  struct Settings : FleetRunner::Settings {
    CheckPolicy::Config policy;
  };

  // `transports` must outlive the runner.
  CheckRunner(asio::io_context& io, Settings settings, AgentTransports& transports);
  ~CheckRunner() override;

  // Runs to the end; fails with the exit code (kExitFailure) when the
  // rendezvous could not listen, said on the console.
  Result<void, int> run();
  const CheckResult& result() const { return policy_.result(); }

 private:
  void on_join(ConnId conn, const proto::Join& join) override;
  void on_message(ConnId conn, proto::Message&& message) override;
  void on_connection_closed(ConnId conn, const std::string& reason) override;
  void on_signal(int signal) override;
  void on_timer(std::size_t which) override;
  LaunchSpec launch_spec(const PlannedNode& planned, const LaunchContext& context) override;
  std::string node_label(int node) const override;
  void on_agent_exited(int node, int exit_code, const std::string& error,
                       const AgentStderr& diagnostics) override;
  void apply(const CheckActions& actions);

  Settings s_;
  CheckPolicy policy_;
  FleetRunner runner_;
};

}  // namespace dlaunch
