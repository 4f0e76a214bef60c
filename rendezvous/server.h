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
#include <string>
#include <unordered_map>

#include "rendezvous/connection.h"
#include "rendezvous/state.h"

namespace dlaunch {

class RendezvousServer {
 public:
  struct Callbacks {
    // An authenticated agent asked to join.
    std::function<void(ConnId, const proto::Join&)> on_join;
    // Any later message of an authenticated agent.
    std::function<void(ConnId, proto::Message&&)> on_message;
    // An authenticated agent's connection closed.
    std::function<void(ConnId, const std::string& reason)> on_close;
  };
  struct Options {
    std::chrono::milliseconds handshake_timeout{10'000};
    std::chrono::milliseconds heartbeat_timeout{15'000};
    // Connections still in the handshake. The coordinator raises it to the
    // number of nodes it expects plus a margin, so that a whole fleet arriving
    // at once is never evicted.
    std::size_t max_pending = 1024;
  };

  RendezvousServer(asio::io_context& io, const asio::ip::tcp::endpoint& endpoint,
                   std::string secret, Callbacks callbacks, Options options);
  ~RendezvousServer();

  std::uint16_t port() const { return port_; }
  void send(ConnId id, const proto::Message& message);
  void close(ConnId id, const std::string& reason);
  // A bulk sender to one agent (--sync) sends while output_full() is false,
  // then waits for on_output_space; an unknown or closed connection counts as
  // full, and its callback never fires.
  bool output_full(ConnId id) const;
  void on_output_space(ConnId id, std::function<void()> callback);
  // Stops or resumes reading from every joined agent (the terminal cannot
  // keep up and the user asked that nothing be skipped).
  void set_reading_paused(bool paused);
  // Stop accepting and close every connection.
  void stop();
  std::size_t rejected_count() const { return rejected_; }

 private:
  struct Session;
  void accept();
  void retry_accept_later(const asio::error_code& ec);
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
  void forget_pending(Session& session);
  std::size_t rejected_ = 0;
  bool stopped_ = false;
  bool accept_warned_ = false;
  std::chrono::steady_clock::time_point last_accept_warning_{};
  std::size_t accept_warnings_suppressed_ = 0;
};

}  // namespace dlaunch
