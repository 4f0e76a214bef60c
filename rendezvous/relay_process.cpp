#include "rendezvous/relay_process.h"

#include <sys/socket.h>
#include <unistd.h>

#include <asio.hpp>
#include <chrono>
#include <csignal>
#include <memory>
#include <string>
#include <unordered_set>

#include "common/console.h"
#include "common/log.h"
#include "rendezvous/relay_channel.h"
#include "rendezvous/relay_wire.h"
#include "rendezvous/server.h"

namespace dlaunch {
namespace {

class Relay {
 public:
  explicit Relay(asio::io_context& io)
      : io_(io),
        channel_(std::make_shared<RelayChannel>(io, kRelayChannelFd, kMaxRelayFrame)),
        coordinator_timer_(io) {}

  void start() {
    channel_->start({[this](Frame&& frame) { on_frame(frame); },
                     [this](const std::string& reason) { end(reason); },
                     [this] {
                       channel_behind_ = false;
                       apply_pause();
                     }});
  }

 private:
  void on_frame(const Frame& frame) {
    last_from_coordinator_ = std::chrono::steady_clock::now();
    auto relayed = decode_relay(frame);
    if (!relayed) return fail("a malformed frame from the coordinator");
    if (!server_) {
      if (relayed->kind != RelayKind::setup) return fail("no setup from the coordinator");
      return serve(relayed->body);
    }
    switch (relayed->kind) {
      case RelayKind::send:
        server_->send_frame(relayed->conn, std::string(relayed->body));
        watch_output(relayed->conn);
        return;
      case RelayKind::close:
        server_->close(relayed->conn, std::string(relayed->body));
        return;
      case RelayKind::heartbeat:
        return;
      case RelayKind::pause_reading:
      case RelayKind::resume_reading:
        coordinator_paused_ = relayed->kind == RelayKind::pause_reading;
        return apply_pause();
      default:
        return fail("an unexpected frame from the coordinator");
    }
  }

  void serve(std::string_view body) {
    auto setup = decode_setup(body);
    if (!setup) return fail("a malformed setup from the coordinator");
    log::set_level(static_cast<log::Level>(setup->log_level));
    asio::ip::tcp::acceptor listener(io_);
    sockaddr_storage address{};
    socklen_t length = sizeof address;
    if (::getsockname(kRelayListenerFd, reinterpret_cast<sockaddr*>(&address), &length) != 0)
      return fail("no listener on descriptor 3");
    const auto protocol = address.ss_family == AF_INET6 ? asio::ip::tcp::v6() : asio::ip::tcp::v4();
    listener.assign(protocol, kRelayListenerFd);
    RendezvousService::Options options;
    options.handshake_timeout = setup->handshake_timeout;
    options.heartbeat_timeout = setup->heartbeat_timeout;
    options.max_pending = setup->max_pending;
    options.max_sessions = setup->max_sessions;
    server_ = std::make_unique<RendezvousServer>(
        std::move(listener), std::move(setup->secret),
        RendezvousService::Callbacks{[this](ConnId c, const proto::Join& j) {
                                       forward(RelayKind::joined, c,
                                               proto::encode(proto::Message{j}));
                                     },
                                     [this](ConnId c, proto::Message&& m) {
                                       forward(RelayKind::message, c, proto::encode(m));
                                     },
                                     [this](ConnId c, const std::string& reason) {
                                       reported_full_.erase(c);
                                       forward(RelayKind::closed, c, reason);
                                     }},
        options);
    heartbeat_timeout_ = setup->heartbeat_timeout;
    watch_coordinator();
  }

  // A coordinator whose loop no longer runs (stopped, hung) sends no
  // heartbeat: after the agents' own timeout the relay ends, closing their
  // connections, as they would have ended with a coordinator that held them.
  void watch_coordinator() {
    if (heartbeat_timeout_.count() <= 0) return;
    coordinator_timer_.expires_after(heartbeat_timeout_ / 3);
    coordinator_timer_.async_wait([this](const asio::error_code& ec) {
      if (ec) return;
      if (std::chrono::steady_clock::now() - last_from_coordinator_ > heartbeat_timeout_)
        return fail("the coordinator sent nothing for " +
                    std::to_string(heartbeat_timeout_.count() / 1000) + " s");
      watch_coordinator();
    });
  }

  void forward(RelayKind kind, ConnId conn, std::string_view body) {
    channel_->send(encode_relay(kind, conn, body));
    // The coordinator is behind: the agents wait in their own send queues.
    if (!channel_behind_ && channel_->over_limit()) {
      channel_behind_ = true;
      apply_pause();
    }
  }

  // Tells the coordinator when an agent's output lane is full, and when it
  // has room again, so that a bulk sender (--sync) holds back per agent.
  void watch_output(ConnId conn) {
    if (!server_->is_open(conn) || !server_->output_full(conn)) return;
    if (!reported_full_.insert(conn).second) return;
    forward(RelayKind::full, conn, {});
    server_->on_output_space(conn, [this, conn] {
      if (reported_full_.erase(conn) > 0) forward(RelayKind::space, conn, {});
    });
  }

  void apply_pause() {
    if (server_) server_->set_reading_paused(coordinator_paused_ || channel_behind_);
  }

  void fail(const std::string& why) {
    log::error(why);
    channel_->close(why);
  }

  void end(const std::string&) {
    coordinator_timer_.cancel();
    if (server_) server_->stop();
    io_.stop();
  }

  asio::io_context& io_;
  std::shared_ptr<RelayChannel> channel_;
  std::unique_ptr<RendezvousServer> server_;
  std::unordered_set<ConnId> reported_full_;
  asio::steady_timer coordinator_timer_;
  std::chrono::steady_clock::time_point last_from_coordinator_ = std::chrono::steady_clock::now();
  std::chrono::milliseconds heartbeat_timeout_{0};
  bool coordinator_paused_ = false;
  bool channel_behind_ = false;
};

}  // namespace

int run_rendezvous_relay() {
  // Interrupts are the coordinator's to handle: it stops the agents through
  // this relay, which must outlive that. It ends when the coordinator does.
  std::signal(SIGINT, SIG_IGN);
  std::signal(SIGHUP, SIG_IGN);
  std::signal(SIGPIPE, SIG_IGN);
  // Its lines land among the coordinator's, on the same stderr and in its
  // shape, naming which relay spoke.
  log::set_sink([pid = ::getpid()](log::Level level, const std::string& message) {
    console().line(
        log::format_line(level, "rendezvous relay " + std::to_string(pid) + ": " + message));
  });
  // Run by hand (the name is only a way in), descriptors 3 and 4 are not
  // what the coordinator passes: say so rather than fail obscurely.
  int type = 0;
  socklen_t length = sizeof type;
  if (::getsockopt(kRelayChannelFd, SOL_SOCKET, SO_TYPE, &type, &length) != 0 ||
      type != SOCK_STREAM) {
    log::error("started without a coordinator: dlaunch starts its relays itself");
    return 2;
  }
  try {
    asio::io_context io;
    Relay relay(io);
    relay.start();
    io.run();
  } catch (const std::exception& e) {
    log::error(e.what());
    return 1;
  }
  return 0;
}

}  // namespace dlaunch
