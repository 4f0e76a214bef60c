// The rendezvous TCP server. It owns the acceptor and every session; it runs the
// handshake itself (magic, version, HMAC proof of the job's secret) and only then
// tells its owner about the peer. A peer that misbehaves before or after that is
// logged and dropped; the server keeps serving everyone else.
#pragma once

#include <asio.hpp>
#include <chrono>
#include <functional>
#include <list>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>

#include "common/throttled_warning.h"
#include "rendezvous/connection.h"
#include "rendezvous/service.h"
#include "rendezvous/state.h"

namespace dlaunch {

// A listening socket for the rendezvous on `endpoint` (port 0: any), set up as
// the server needs it: keepalive and no-delay for the sockets it accepts,
// dual-stack on IPv6. The server that accepts on it makes it non-blocking.
asio::ip::tcp::acceptor open_rendezvous_listener(asio::io_context& io,
                                                 const asio::ip::tcp::endpoint& endpoint);

class RendezvousServer : public RendezvousService {
 public:
  RendezvousServer(asio::io_context& io, const asio::ip::tcp::endpoint& endpoint,
                   std::string secret, Callbacks callbacks, Options options);
  // Serves on a listener opened elsewhere (a relay process's inherited one).
  RendezvousServer(asio::ip::tcp::acceptor listener, std::string secret, Callbacks callbacks,
                   Options options);
  ~RendezvousServer() override;

  std::uint16_t port() const override { return port_; }
  void send(ConnId id, const proto::Message& message) override;
  // An already encoded message (a relay forwards the coordinator's as they
  // came), on the ordered lane.
  void send_frame(ConnId id, std::string frame);
  void close(ConnId id, const std::string& reason) override;
  bool output_full(ConnId id) const override;
  void on_output_space(ConnId id, std::function<void()> callback) override;
  void set_reading_paused(bool paused) override;
  void stop() override;
  // Whether `id` is a connection still open.
  bool is_open(ConnId id) const;
  std::size_t rejected_count() const { return rejected_; }

 private:
  struct Session;
  void accept();
  void retry_accept_later(const asio::error_code& ec);
  void resume_accepting();
  // Accepts per wake-up at most: a whole accept queue at Linux's default
  // net.core.somaxconn. Each wake-up waits behind every handler already
  // queued (the handshakes of the connections accepted at the last one), so
  // a batch of 256 still let the kernel's queue fill while 10,000 agents
  // arrived within half a second on 2 cores. The bound keeps a flood that
  // never ends from holding up everything else.
  static constexpr int kAcceptsPerWake = 4096;
  void admit(asio::ip::tcp::socket socket, const asio::ip::tcp::endpoint& peer);
  void on_handshake_message(const std::shared_ptr<Session>& session, proto::Message&& message);
  void drop(const std::shared_ptr<Session>& session, const std::string& reason);
  void warn_accept_failed(const asio::error_code& ec);

  asio::ip::tcp::acceptor acceptor_;
  bool accept_paused_ = false;  // holding max_sessions: accept() re-arms on a close
  asio::steady_timer retry_timer_;
  std::string secret_;
  Callbacks callbacks_;
  Options options_;
  std::uint16_t port_ = 0;
  ConnId next_id_ = 1;
  std::unordered_map<ConnId, std::shared_ptr<Session>> sessions_;
  // Sessions still in the handshake, oldest first: those that have sent
  // nothing yet, and those that said Hello and owe a Join. Past max_pending,
  // the silent ones go first (a flood of idle peers evicts itself), then the
  // slowest greeted ones. Each session keeps its position for O(1) removal.
  std::list<ConnId> silent_;
  std::list<ConnId> greeted_;
  std::size_t pending_count() const { return silent_.size() + greeted_.size(); }
  bool full() const;
  void forget_pending(Session& session);
  std::size_t rejected_ = 0;
  bool stopped_ = false;
  ThrottledWarning accept_failed_{std::chrono::seconds(5)};
  ThrottledWarning wrong_secret_{std::chrono::seconds(5)};
  // Addresses told about a protocol version of their own, once each.
  std::set<std::string> version_warned_;
  static constexpr std::size_t kMaxVersionWarnings = 1024;
};

}  // namespace dlaunch
