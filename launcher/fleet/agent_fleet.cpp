#include "launcher/fleet/agent_fleet.h"

#include <algorithm>
#include <csignal>
#include <system_error>

#include "common/log.h"
#include "common/posix.h"
#include "rendezvous/relayed_server.h"
#include "rendezvous/server.h"

namespace dlaunch {

AgentFleet::AgentFleet(asio::io_context& io, AgentTransports& transports, Settings settings)
    : io_(io),
      transports_(transports),
      s_(std::move(settings)),
      agents_(s_.nnodes),
      signals_(io, SIGINT, SIGTERM) {}

LaunchContext AgentFleet::launch_context(const std::string& rdzv_connect,
                                         const std::string& local_address) const {
  LaunchContext context;
  context.secret = s_.secret;
  context.rdzv_host = rdzv_connect.empty() ? local_address : rdzv_connect;
  context.rdzv_port = server_->port();
  return context;
}

AgentFleet::~AgentFleet() = default;

Result<void> AgentFleet::listen(RendezvousService::Callbacks callbacks) {
  if (s_.service) {
    server_ = s_.service(std::move(callbacks));
    return {};
  }
  RendezvousServer::Options options;
  options.heartbeat_timeout = s_.heartbeat_timeout;
  // Room for every expected agent in the handshake at once, plus a margin for
  // retries and strays: a whole fleet arriving together is never evicted.
  options.max_pending = std::max(options.max_pending, s_.nnodes + 1024);
  // Asio reports a bad address, a port in use and a relay that cannot start
  // by throwing std::system_error (common/README.md): here they become the
  // one message both jobs and checks give.
  try {
    const asio::ip::tcp::endpoint endpoint(asio::ip::make_address(s_.bind),
                                           static_cast<std::uint16_t>(s_.port));
    if (s_.relays == 0 && s_.sessions_each > 0) {
      // Handshakes past the budget evict each other, never the job's files.
      options.max_sessions = s_.sessions_each;
      options.evict_when_full = true;
    }
    if (s_.relays > 0) {
      options.max_sessions = s_.sessions_each;
      server_ = std::make_unique<RelayedRendezvous>(io_, endpoint, s_.secret, std::move(callbacks),
                                                    options, s_.relays);
    } else {
      server_ = std::make_unique<RendezvousServer>(io_, endpoint, s_.secret, std::move(callbacks),
                                                   options);
    }
  } catch (const std::system_error& e) {
    return fail("cannot listen for the rendezvous on " + s_.bind + ":" + std::to_string(s_.port) +
                ": " + e.what() +
                (s_.port
                     ? " (is another job using it? choose another with " + s_.port_chosen_by + ")"
                     : ""));
  }
  if (s_.relays > 0) {
    log::info("rendezvous: ", s_.relays, " relay processes hold the agents' connections, up to ",
              s_.sessions_each, " each (this process may open ", descriptor_limit(), " files)");
  }
  log::debug("rendezvous listening on ", s_.bind, ":", server_->port());
  return {};
}

void AgentFleet::start_agent(const PlannedNode& planned,
                             std::function<std::string(const std::string&)> make_stdin,
                             AgentLaunch launch, AgentEvents events) {
  auto& agent = agents_[static_cast<std::size_t>(planned.node_rank)];
  agent.plan = planned;
  launch.make_stdin = std::move(make_stdin);
  agent.handle = transports_.for_node(planned.local).start(planned.host, launch, std::move(events));
}

void AgentFleet::watch_signals(std::function<void(int)> on_signal) {
  on_signal_ = std::move(on_signal);
  next_signal();
}

void AgentFleet::next_signal() {
  signals_.async_wait([this](const asio::error_code& ec, int signal) {
    if (ec) return;
    on_signal_(signal);
    next_signal();
  });
}

void AgentFleet::stop() {
  signals_.cancel();
  if (server_) server_->stop();
}

bool AgentFleet::any_local() const {
  return std::any_of(agents_.begin(), agents_.end(),
                     [](const Agent& a) { return a.handle && a.plan.local; });
}

}  // namespace dlaunch
