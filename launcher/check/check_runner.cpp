#include "launcher/check/check_runner.h"

#include <chrono>
#include <csignal>

#include "common/console.h"
#include "common/posix.h"
#include "launcher/fleet/agent_link_perform.h"
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
      transports_(transports),
      policy_(s_.policy),
      signals_(io, SIGINT, SIGTERM),
      join_timer_(io),
      probe_timer_(io),
      round_timer_(io),
      nccl_timer_(io),
      stop_timer_(io) {
  s_.plan.rdzv_connect = address_for_agents(s_.plan.rdzv_connect);
}

CheckRunner::~CheckRunner() = default;

bool CheckRunner::run() {
  std::signal(SIGHUP, SIG_IGN);
  std::signal(SIGPIPE, SIG_IGN);
  become_subreaper();  // orphans of local agents come back to us
  watch_signals();
  try {
    RendezvousServer::Options options;
    options.heartbeat_timeout = std::chrono::seconds(s_.options.heartbeat_timeout_s);
    options.max_pending =
        std::max(options.max_pending, static_cast<std::size_t>(s_.plan.nnodes) + 1024);
    server_ = std::make_unique<RendezvousServer>(
        io_,
        asio::ip::tcp::endpoint(asio::ip::make_address(s_.plan.rdzv_bind),
                                static_cast<std::uint16_t>(s_.plan.rdzv_port)),
        s_.secret,
        RendezvousServer::Callbacks{
            [this](ConnId c, const proto::Join& j) { apply(policy_.on_join(c, j, now_us())); },
            [this](ConnId c, proto::Message&& m) { apply(policy_.on_message(c, m, now_us())); },
            [this](ConnId c, const std::string& r) { apply(policy_.on_connection_closed(c, r)); }},
        options);
  } catch (const std::exception& e) {
    console().error("cannot listen for the rendezvous on " + s_.plan.rdzv_bind + ":" +
                    std::to_string(s_.plan.rdzv_port) + ": " + e.what());
    return false;
  }
  agents_.resize(static_cast<std::size_t>(s_.plan.nnodes));
  for (const auto& planned : s_.plan.nodes) start_agent(planned);
  apply(policy_.start());
  if (!policy_.finished()) io_.run();
  const bool local_agents = std::any_of(s_.plan.nodes.begin(), s_.plan.nodes.end(),
                                        [](const PlannedNode& n) { return n.local; });
  if (local_agents) end_descendants();
  return true;
}

void CheckRunner::start_agent(const PlannedNode& planned) {
  const int node_rank = planned.node_rank;
  auto& agent = agents_[static_cast<std::size_t>(node_rank)];
  agent.plan = planned;
  AgentLaunch launch;
  launch.agent_binary = s_.agent_binary;
  launch.make_stdin = [this, node_rank](const std::string& local_address) {
    LaunchContext context;
    context.secret = s_.secret;
    context.rdzv_host = s_.plan.rdzv_connect.empty() ? local_address : s_.plan.rdzv_connect;
    context.rdzv_port = server_->port();
    LaunchSpec spec = make_launch_spec(s_.plan, agents_[static_cast<std::size_t>(node_rank)].plan,
                                       s_.options, context);
    spec.check = true;
    spec.argv.clear();
    spec.nproc = 1;  // no rank is started; a GPU count is not needed for that
    return encode_launch_spec(spec);
  };
  AgentEvents events;
  events.on_stderr = [this, node_rank](std::string_view bytes) {
    agents_[static_cast<std::size_t>(node_rank)].diagnostics.add(bytes,
                                                                 policy_.node_label(node_rank));
  };
  events.on_exit = [this, node_rank](int code, const std::string& error) {
    const auto& diagnostics = agents_[static_cast<std::size_t>(node_rank)].diagnostics;
    apply(policy_.on_agent_exited(node_rank, code, error, diagnostics.last(3)));
  };
  agent.handle = transports_.for_node(planned.local).start(planned.host, launch, std::move(events));
}

void CheckRunner::watch_signals() {
  signals_.async_wait([this](const asio::error_code& ec, int signal) {
    if (ec) return;
    apply(policy_.on_signal(signal));
    watch_signals();
  });
}

void CheckRunner::apply(const CheckActions& actions) {
  for (const auto& action : actions) {
    std::visit(
        [this](const auto& a) {
          if constexpr (agent_link::is_action<std::decay_t<decltype(a)>>) {
            agent_link::perform(*server_, agents_, a);
          } else {
            perform(a);
          }
        },
        action);
  }
}

asio::steady_timer& CheckRunner::timer(CheckTimer which) {
  switch (which) {
    case CheckTimer::join:
      return join_timer_;
    case CheckTimer::probe:
      return probe_timer_;
    case CheckTimer::round:
      return round_timer_;
    case CheckTimer::nccl:
      return nccl_timer_;
    case CheckTimer::stop:
      break;
  }
  return stop_timer_;
}

void CheckRunner::perform(const check_action::ArmTimer& a) {
  auto& t = timer(a.timer);
  t.expires_after(a.after);
  t.async_wait([this, which = a.timer](const asio::error_code& ec) {
    if (!ec) apply(policy_.on_timer(which));
  });
}

void CheckRunner::perform(const check_action::Finish&) {
  join_timer_.cancel();
  probe_timer_.cancel();
  round_timer_.cancel();
  nccl_timer_.cancel();
  stop_timer_.cancel();
  signals_.cancel();
  if (server_) server_->stop();
  io_.stop();
}

}  // namespace dlaunch
