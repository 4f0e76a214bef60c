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
#pragma once

#include <array>
#include <asio.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace dlaunch {

class ProbeListener {
 public:
  // Listens on every address (IPv6 and IPv4 where the host has IPv6, else
  // IPv4), on `port` when it is not 0 and free, else on a free port; port() is
  // 0 when no socket could be opened.
  explicit ProbeListener(asio::io_context& io, std::uint16_t port = 0);
  std::uint16_t port() const { return port_; }
  // Stops accepting; connections already accepted end when their peer closes.
  void close();
  // Times a batch of accepts failed (out of descriptors, say); after each the
  // listener pauses instead of retrying a queue it cannot take.
  std::size_t accept_failures() const { return state_->accept_failures; }
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
  struct State {
    explicit State(asio::io_context& io) : acceptor(io), pause(io) {}
    asio::ip::tcp::acceptor acceptor;
    asio::steady_timer pause;
    Buffer buffer;
    std::size_t accept_failures = 0;
  };
  static void accept(std::shared_ptr<State> state);
  static void pause_then_accept(std::shared_ptr<State> state);
  // Accepts per wake-up at most, so a flood of probes cannot starve the
  // agent's other work (its rendezvous connection, its ranks' output).
  static constexpr int kAcceptsPerWake = 256;

  std::shared_ptr<State> state_;
  std::uint16_t port_ = 0;
};

}  // namespace dlaunch
