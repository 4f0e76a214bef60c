// The port node 0's agent accepts probes on: every agent tries node 0's
// candidate addresses here before any rank starts, so the MASTER_ADDR the
// coordinator picks is one every node has reached. The same port becomes
// MASTER_PORT: holding it open until the ranks start keeps it free for them,
// and a firewall that drops it is found before a trainer hangs on it.
// `dlaunch check` opens one on every agent: its peers' bulk tests write here,
// and accepted connections are drained (read and discarded) until they close.
// Every accepted connection is first answered with one byte (kProbeAnswer): a
// prober counts an address as reached once it has it, which proves that this
// agent, not merely some kernel or middlebox, accepted the connection.
// The port is open to the network before any secret is proven: at most
// Limits::max_open connections are held, a new one closing the oldest (which
// has had its byte), and each ends at Limits::lifetime whatever it sends.
#pragma once

#include <array>
#include <asio.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>

namespace dlaunch {

class ProbeListener {
 public:
  struct Limits {
    std::size_t max_open = 512;
    // A probe closes within milliseconds of its answer; `dlaunch check`'s
    // bulk tests write for up to a minute.
    std::chrono::milliseconds lifetime{10'000};
  };
  // Listens on every address (IPv6 and IPv4 where the host has IPv6, else
  // IPv4), on `port` when it is not 0 and free, else on a free port; port() is
  // 0 when no socket could be opened.
  explicit ProbeListener(asio::io_context& io, std::uint16_t port = 0);
  ProbeListener(asio::io_context& io, std::uint16_t port, Limits limits);
  std::uint16_t port() const { return port_; }
  // Stops accepting; connections already accepted end when their peer closes.
  void close();
  // Times a batch of accepts failed (out of descriptors, say); after each the
  // listener pauses instead of retrying a queue it cannot take.
  std::size_t accept_failures() const { return state_->accept_failures; }
  // Connections held now.
  std::size_t open_connections() const { return state_->open.size(); }
  ~ProbeListener() { close(); }
  ProbeListener(const ProbeListener&) = delete;
  ProbeListener& operator=(const ProbeListener&) = delete;

  using Buffer = std::shared_ptr<std::array<char, 64 * 1024>>;
  static constexpr char kProbeAnswer = 'D';
  // How long the listener waits after a failed batch of accepts: a queue that
  // cannot be taken (no descriptor left) stays readable, and waiting on it
  // again at once would spin a core until some connection closes.
  static constexpr std::chrono::milliseconds kPauseAfterFailure{50};

 private:
  // Shared with the pending accept's handler: a connection accepted just
  // before close() completes after this object may be gone, and its handler
  // must find a closed acceptor, not freed memory.
  struct Held;
  struct State {
    State(asio::io_context& io, Limits l) : acceptor(io), pause(io), limits(l) {}
    asio::ip::tcp::acceptor acceptor;
    asio::steady_timer pause;
    Buffer buffer;
    std::size_t accept_failures = 0;
    Limits limits;
    std::list<std::shared_ptr<Held>> open;  // oldest first
  };
  static void accept(std::shared_ptr<State> state);
  static void hold(const std::shared_ptr<State>& state, asio::ip::tcp::socket socket);
  static void drain(std::shared_ptr<State> state, std::shared_ptr<Held> held);
  static void release(State& state, Held& held);
  static void pause_then_accept(std::shared_ptr<State> state);
  // Accepts per wake-up at most, so a flood of probes cannot starve the
  // agent's other work (its rendezvous connection, its ranks' output).
  static constexpr int kAcceptsPerWake = 256;

  std::shared_ptr<State> state_;
  std::uint16_t port_ = 0;
};

}  // namespace dlaunch
