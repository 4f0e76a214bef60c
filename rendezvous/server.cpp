#include "rendezvous/server.h"

#include <algorithm>

#include "common/log.h"
#include "protocol/auth.h"
#include "rendezvous/accept_queued.h"

namespace dlaunch {

struct RendezvousServer::Session {
  ConnId id = 0;
  std::shared_ptr<Connection> connection;
  enum class Phase { hello, join, joined } phase = Phase::hello;
  std::string server_nonce;
  std::string agent_nonce;
  std::list<ConnId>* pending_list = nullptr;  // silent_ or greeted_, while in the handshake
  std::list<ConnId>::iterator pending_pos;
};

void RendezvousServer::forget_pending(Session& session) {
  if (session.pending_list == nullptr) return;
  session.pending_list->erase(session.pending_pos);
  session.pending_list = nullptr;
}

asio::ip::tcp::acceptor open_rendezvous_listener(asio::io_context& io,
                                                 const asio::ip::tcp::endpoint& endpoint) {
  asio::ip::tcp::acceptor acceptor(io);
  acceptor.open(endpoint.protocol());
  acceptor.set_option(asio::socket_base::reuse_address(true));
  if (endpoint.protocol() == asio::ip::tcp::v6()) {
    asio::error_code ec;
    acceptor.set_option(asio::ip::v6_only(false), ec);
  }
  // Accepted agents inherit these: no option calls per connection.
  enable_keepalive(acceptor.native_handle());
  acceptor.bind(endpoint);
  acceptor.listen(asio::socket_base::max_listen_connections);
  return acceptor;
}

RendezvousServer::RendezvousServer(asio::io_context& io, const asio::ip::tcp::endpoint& endpoint,
                                   std::string secret, Callbacks callbacks, Options options)
    : RendezvousServer(open_rendezvous_listener(io, endpoint), std::move(secret),
                       std::move(callbacks), options) {}

RendezvousServer::RendezvousServer(asio::ip::tcp::acceptor listener, std::string secret,
                                   Callbacks callbacks, Options options)
    : acceptor_(std::move(listener)),
      retry_timer_(acceptor_.get_executor()),
      secret_(std::move(secret)),
      callbacks_(std::move(callbacks)),
      options_(options) {
  port_ = acceptor_.local_endpoint().port();
  // accept() takes connections until the queue is empty: it must not block.
  acceptor_.non_blocking(true);
  accept();
}

RendezvousServer::~RendezvousServer() {
  stop();
}

// Every queued connection at each wake-up (accept_queued.h): accepted early,
// a connection waits in its own socket instead of the kernel's queue, and
// admit() bounds how many do.
void RendezvousServer::accept() {
  // Holding max_sessions: the kernel keeps the next connections queued for
  // another process on this listener, or for us once one of ours closes.
  if (full()) {
    accept_paused_ = true;
    return;
  }
  acceptor_.async_wait(asio::socket_base::wait_read, [this](const asio::error_code& ec) {
    if (stopped_ || ec == asio::error::operation_aborted) return;
    if (ec) return retry_accept_later(ec);
    auto take = [this](asio::ip::tcp::socket socket, const asio::ip::tcp::endpoint& peer) {
      admit(std::move(socket), peer);
    };
    const auto held = sessions_.size() - (options_.evict_when_full ? pending_count() : 0);
    const auto room = options_.max_sessions - std::min(options_.max_sessions, held);
    const int at_most = static_cast<int>(std::min<std::size_t>(kAcceptsPerWake, room));
    if (auto failed = accept_queued(acceptor_, at_most, take)) return retry_accept_later(failed);
    accept();
  });
}

// No place for another connection, and none to make by eviction.
bool RendezvousServer::full() const {
  if (sessions_.size() < options_.max_sessions) return false;
  return !options_.evict_when_full || pending_count() == 0;
}

void RendezvousServer::resume_accepting() {
  if (!accept_paused_ || stopped_ || full()) return;
  accept_paused_ = false;
  accept();
}

// Out of descriptors (a flood) or a transient error: try again shortly instead
// of spinning on an acceptor that fails at once.
void RendezvousServer::retry_accept_later(const asio::error_code& ec) {
  warn_accept_failed(ec);
  retry_timer_.expires_after(std::chrono::milliseconds(50));
  retry_timer_.async_wait([this](const asio::error_code& e) {
    if (!e && !stopped_) accept();
  });
}

// A full accept queue or descriptor table fails every accept for a while:
// one warning per few seconds, with how many were left unsaid.
void RendezvousServer::warn_accept_failed(const asio::error_code& ec) {
  if (auto text = accept_failed_.say("rendezvous accept: " + ec.message())) log::warn(*text);
}

void RendezvousServer::admit(asio::ip::tcp::socket socket, const asio::ip::tcp::endpoint& peer) {
  // Too many connections still in the handshake: drop the oldest silent one,
  // else the oldest that has not finished. A real agent finishes its handshake
  // in milliseconds, so a flood of idle or slow peers evicts itself instead of
  // locking agents out.
  while (pending_count() > 0 &&
         (pending_count() >= options_.max_pending ||
          (options_.evict_when_full && sessions_.size() >= options_.max_sessions))) {
    auto& victims = silent_.empty() ? greeted_ : silent_;
    auto it = sessions_.find(victims.front());
    if (it == sessions_.end()) {
      victims.pop_front();
      continue;
    }
    forget_pending(*it->second);
    it->second->connection->close("evicted: too many connections in the handshake");
  }
  auto session = std::make_shared<Session>();
  session->id = next_id_++;
  session->connection =
      std::make_shared<Connection>(std::move(socket), kMaxPreAuthFrame,
                                   peer.address().to_string() + ":" + std::to_string(peer.port()));
  sessions_[session->id] = session;
  session->pending_list = &silent_;
  session->pending_pos = silent_.insert(silent_.end(), session->id);
  std::weak_ptr<Session> weak = session;
  session->connection->set_receive_timeout(options_.handshake_timeout);
  // One deadline from connect: heartbeats or a slow Hello do not stretch it.
  session->connection->set_deadline(SteadyClock::now() + options_.handshake_timeout,
                                    "no Join within " +
                                        std::to_string(options_.handshake_timeout.count() / 1000) +
                                        " s of connecting");
  session->connection->start({[this, weak](proto::Message&& m) {
                                auto s = weak.lock();
                                if (!s) return;
                                if (s->phase == Session::Phase::joined) {
                                  if (callbacks_.on_message)
                                    callbacks_.on_message(s->id, std::move(m));
                                } else {
                                  on_handshake_message(s, std::move(m));
                                }
                              },
                              [this, weak](const std::string& reason) {
                                auto s = weak.lock();
                                if (!s) return;
                                const bool joined = s->phase == Session::Phase::joined;
                                sessions_.erase(s->id);
                                resume_accepting();
                                if (joined) {
                                  if (callbacks_.on_close) callbacks_.on_close(s->id, reason);
                                } else {
                                  forget_pending(*s);
                                  ++rejected_;
                                  log::debug("rendezvous: dropped ", s->connection->remote(),
                                             " before joining: ", reason);
                                }
                              }});
}

void RendezvousServer::on_handshake_message(const std::shared_ptr<Session>& session,
                                            proto::Message&& message) {
  if (session->phase == Session::Phase::hello) {
    auto* hello = std::get_if<proto::Hello>(&message);
    if (hello == nullptr) return drop(session, "expected hello");
    if (hello->magic != proto::kMagic) return drop(session, "bad magic");
    if (hello->version != proto::kVersion) {
      // Manual mode with two releases: the node itself is told by the Reject;
      // node 0, once per address, so that its wait is not a mystery.
      const std::string& remote = session->connection->remote();
      const std::string address = remote.substr(0, remote.rfind(':'));
      if (version_warned_.size() < kMaxVersionWarnings && version_warned_.insert(address).second)
        log::warn("rendezvous: ", address, " runs dlaunch protocol ", hello->version,
                  ", this dlaunch speaks ", proto::kVersion,
                  ": install the same dlaunch release on every node (manual mode), or let dlaunch "
                  "start the agents (it uploads its own)");
      session->connection->send(proto::Reject{
          "protocol version " + std::to_string(hello->version) + " is not supported (this " +
          "coordinator speaks version " + std::to_string(proto::kVersion) +
          "); use the same dlaunch release everywhere"});
      session->connection->close_after_flush("wrong protocol version");
      return;
    }
    if (hello->agent_nonce.size() != proto::kNonceSize) return drop(session, "bad nonce");
    session->agent_nonce = hello->agent_nonce;
    session->server_nonce = auth::random_bytes(proto::kNonceSize);
    session->phase = Session::Phase::join;
    forget_pending(*session);
    session->pending_list = &greeted_;
    session->pending_pos = greeted_.insert(greeted_.end(), session->id);
    session->connection->send(
        proto::Challenge{proto::kMagic, proto::kVersion, session->server_nonce});
    return;
  }
  auto* join = std::get_if<proto::Join>(&message);
  if (join == nullptr) return drop(session, "expected join");
  const auto expected = auth::join_proof(secret_, session->server_nonce, session->agent_nonce);
  if (!auth::constant_time_equal(join->proof, expected)) {
    // A stranger may try thousands a second: one line per few seconds.
    if (auto text = wrong_secret_.say("rendezvous: " + session->connection->remote() +
                                      " failed to prove the job's secret; dropped"))
      log::warn(*text);
    session->phase = Session::Phase::hello;  // nothing more is accepted from it
    session->connection->send(
        proto::Reject{"wrong job secret (in manual mode every node needs the same --secret-file)"});
    session->connection->close_after_flush("wrong secret");
    return;
  }
  session->phase = Session::Phase::joined;
  forget_pending(*session);
  session->connection->set_max_frame(kMaxFrame);
  session->connection->set_deadline(SteadyClock::time_point::max(), {});
  session->connection->set_receive_timeout(options_.heartbeat_timeout);
  session->connection->enable_heartbeat(options_.heartbeat_timeout / 3);
  session->connection->send(
      proto::Welcome{auth::welcome_proof(secret_, session->server_nonce, session->agent_nonce)});
  if (callbacks_.on_join) callbacks_.on_join(session->id, *join);
}

void RendezvousServer::drop(const std::shared_ptr<Session>& session, const std::string& reason) {
  session->connection->close(reason);
}

void RendezvousServer::send(ConnId id, const proto::Message& message) {
  auto it = sessions_.find(id);
  if (it != sessions_.end()) it->second->connection->send(message);
}

void RendezvousServer::send_frame(ConnId id, std::string frame) {
  auto it = sessions_.find(id);
  if (it != sessions_.end()) it->second->connection->send_frame(std::move(frame));
}

bool RendezvousServer::is_open(ConnId id) const {
  auto it = sessions_.find(id);
  return it != sessions_.end() && !it->second->connection->closed();
}

void RendezvousServer::close(ConnId id, const std::string& reason) {
  auto it = sessions_.find(id);
  if (it != sessions_.end()) it->second->connection->close_after_flush(reason);
}

bool RendezvousServer::output_full(ConnId id) const {
  auto it = sessions_.find(id);
  return it == sessions_.end() || it->second->connection->closed() ||
         it->second->connection->output_full();
}

void RendezvousServer::on_output_space(ConnId id, std::function<void()> callback) {
  auto it = sessions_.find(id);
  if (it != sessions_.end()) it->second->connection->on_output_space(std::move(callback));
}

void RendezvousServer::set_reading_paused(bool paused) {
  for (auto& [id, s] : sessions_) {
    if (s->phase != Session::Phase::joined) continue;
    if (paused) {
      s->connection->pause_reading();
    } else {
      s->connection->resume_reading();
    }
  }
}

void RendezvousServer::stop() {
  if (stopped_) return;
  stopped_ = true;
  asio::error_code ec;
  acceptor_.close(ec);
  retry_timer_.cancel();
  silent_.clear();
  greeted_.clear();
  for (auto& [id, s] : sessions_) s->pending_list = nullptr;
  auto sessions = std::move(sessions_);
  sessions_.clear();
  for (auto& [id, s] : sessions) s->connection->close("server stopped");
}

}  // namespace dlaunch
