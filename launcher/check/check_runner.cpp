#include "launcher/check/check_runner.h"

#include <chrono>
#include <csignal>

#include "common/console.h"
#include "common/posix.h"
#include "launcher/plan/agent_address.h"
#include "launcher/plan/launch_spec_builder.h"
#include "protocol/launch_spec.h"

namespace dlaunch {
namespace {

std::int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

CheckRunner::CheckRunner(asio::io_context& io, Settings settings, AgentTransports& transports)
    : io_(io),
      s_(std::move(settings)),
      policy_(s_.policy),
      fleet_(io, transports,
             {s_.plan.rdzv_bind, s_.plan.rdzv_port, s_.secret,
              std::chrono::seconds(s_.options.heartbeat_timeout_s),
              static_cast<std::size_t>(s_.plan.nnodes), s_.rendezvous_relays, s_.sessions_each,
              s_.service,
              // check has no --rdzv-port: its port is the hosts file's.
              "[rendezvous] port in the hosts file"}),
      timers_(io) {
  s_.plan.rdzv_connect = address_for_agents(s_.plan.rdzv_connect);
}

CheckRunner::~CheckRunner() = default;

bool CheckRunner::run() {
  std::signal(SIGHUP, SIG_IGN);
  std::signal(SIGPIPE, SIG_IGN);
  become_subreaper();  // orphans of local agents come back to us
  fleet_.watch_signals([this](int signal) { apply(policy_.on_signal(signal)); });
  auto listening = fleet_.listen(
      {[this](ConnId c, const proto::Join& j) { apply(policy_.on_join(c, j, now_us())); },
       [this](ConnId c, proto::Message&& m) { apply(policy_.on_message(c, m, now_us())); },
       [this](ConnId c, const std::string& r) { apply(policy_.on_connection_closed(c, r)); }});
  if (!listening) {
    console().error(listening.error());
    fleet_.stop();
    return false;
  }
  for (const auto& planned : s_.plan.nodes) start_agent(planned);
  apply(policy_.start());
  if (!policy_.finished()) io_.run();
  if (fleet_.any_local()) end_descendants();
  return true;
}

void CheckRunner::start_agent(const PlannedNode& planned) {
  const int node_rank = planned.node_rank;
  auto make_stdin = [this, node_rank](const std::string& local_address) {
    const LaunchContext context = fleet_.launch_context(s_.plan.rdzv_connect, local_address);
    LaunchSpec spec = make_launch_spec(s_.plan, fleet_.agent(node_rank).plan, s_.options, context);
    spec.check = true;
    // The Python a job's .py program would run with there: check reports it.
    spec.argv = {python_for(s_.options, fleet_.agent(node_rank).plan.host).path};
    spec.nproc = 1;  // no rank is started; a GPU count is not needed for that
    return encode_launch_spec(spec);
  };
  AgentEvents events;
  events.on_stderr = [this, node_rank](std::string_view bytes) {
    fleet_.agent(node_rank).diagnostics.add(bytes, policy_.node_label(node_rank));
  };
  events.on_exit = [this, node_rank](int code, const std::string& error) {
    const auto& diagnostics = fleet_.agent(node_rank).diagnostics;
    apply(policy_.on_agent_exited(node_rank, code, error, diagnostics.last(3)));
  };
  fleet_.start_agent(planned, std::move(make_stdin), s_.agent_binary, std::move(events));
}

void CheckRunner::apply(const CheckActions& actions) {
  fleet_.apply(actions, [this](const auto& a) { perform(a); });
}

void CheckRunner::perform(const check_action::ArmTimer& a) {
  timers_.arm(a.timer, a.after, [this, which = a.timer] { apply(policy_.on_timer(which)); });
}

void CheckRunner::perform(const check_action::Finish&) {
  timers_.cancel_all();
  fleet_.stop();
  io_.stop();
}

}  // namespace dlaunch
