#include "launcher/fleet/fleet_runner.h"

#include <csignal>

#include "common/posix.h"
#include "launcher/transport/agent_address.h"

namespace dlaunch {

FleetRunner::FleetRunner(asio::io_context& io, Settings& settings, AgentTransports& transports,
                         Driver& driver, std::string port_chosen_by)
    : io_(io),
      s_(settings),
      driver_(driver),
      fleet_(io, transports,
             {s_.plan.rdzv_bind, s_.plan.rdzv_port, s_.secret,
              std::chrono::seconds(s_.options.heartbeat_timeout_s),
              static_cast<std::size_t>(s_.plan.nnodes), s_.rendezvous_relays, s_.sessions_each,
              s_.service, std::move(port_chosen_by)}),
      timers_(io) {
  s_.plan.rdzv_connect = address_for_agents(s_.plan.rdzv_connect);
}

Result<void> FleetRunner::start() {
  std::signal(SIGHUP, SIG_IGN);  // a closed terminal or cron must not kill the run
  std::signal(SIGPIPE, SIG_IGN);
  // Local agents' orphans come to us if an agent is killed outright.
  become_subreaper();
  fleet_.watch_signals([this](int signal) { driver_.on_signal(signal); });
  auto listening = fleet_.listen(
      {[this](ConnId c, const proto::Join& j) { driver_.on_join(c, j); },
       [this](ConnId c, proto::Message&& m) { driver_.on_message(c, std::move(m)); },
       [this](ConnId c, const std::string& r) { driver_.on_connection_closed(c, r); }});
  if (!listening) {
    fleet_.stop();
    return listening;
  }
  driver_.on_listening();
  workdir_ = current_directory();
  for (const auto& planned : s_.plan.nodes) start_agent(planned);
  return {};
}

void FleetRunner::start_agent(const PlannedNode& planned) {
  const int node_rank = planned.node_rank;
  auto make_stdin = [this, node_rank](const std::string& local_address) {
    LaunchContext context = fleet_.launch_context(s_.plan.rdzv_connect, local_address);
    context.local_workdir = workdir_;
    return encode_launch_spec(driver_.launch_spec(fleet_.agent(node_rank).plan, context));
  };
  AgentEvents events;
  events.on_stderr = [this, node_rank](std::string_view bytes) {
    auto unreachable =
        fleet_.agent(node_rank).diagnostics.add(bytes, driver_.node_label(node_rank));
    if (unreachable) driver_.on_agent_unreachable(node_rank, std::move(*unreachable));
  };
  events.on_exit = [this, node_rank](int code, const std::string& error) {
    driver_.on_agent_exited(node_rank, code, error, fleet_.agent(node_rank).diagnostics);
  };
  AgentLaunch launch;
  launch.agent_binary = s_.agent_binary;
  launch.job = s_.plan.job;
  fleet_.start_agent(planned, std::move(make_stdin), std::move(launch), std::move(events));
}

void FleetRunner::arm(std::size_t which, std::chrono::milliseconds after) {
  timers_.arm(which, after, [this, which] { driver_.on_timer(which); });
}

void FleetRunner::finish() {
  driver_.on_finish();
  timers_.cancel_all();
  fleet_.stop();
  io_.stop();
}

void FleetRunner::end() {
  if (fleet_.any_local()) end_descendants();
}

}  // namespace dlaunch
