// The rendezvous through relay processes (relay_process.h): for a job with
// more agents than this process may open descriptors. The listener is opened
// here and shared; each relay accepts on it up to its share, does the
// handshakes, and forwards. The coordinator sees the same ConnIds, messages
// and closes as from RendezvousServer; a relay that dies closes its agents'
// connections, each reported with the reason.
#pragma once

#include <sys/types.h>

#include <asio.hpp>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "rendezvous/relay_channel.h"
#include "rendezvous/relay_wire.h"
#include "rendezvous/service.h"

namespace dlaunch {

class RelayedRendezvous : public RendezvousService {
 public:
  // Starts `relays` relay processes (this executable, run as
  // kRelayProgramName), each holding at most options.max_sessions agents.
  RelayedRendezvous(asio::io_context& io, const asio::ip::tcp::endpoint& endpoint,
                    const std::string& secret, Callbacks callbacks, Options options,
                    std::size_t relays);
  ~RelayedRendezvous() override;

  std::uint16_t port() const override { return port_; }
  void send(ConnId id, const proto::Message& message) override;
  void close(ConnId id, const std::string& reason) override;
  bool output_full(ConnId id) const override;
  void on_output_space(ConnId id, std::function<void()> callback) override;
  void set_reading_paused(bool paused) override;
  void stop() override;

  std::size_t relay_count() const { return relays_.size(); }

 private:
  struct Relay {
    pid_t pid = -1;
    std::shared_ptr<RelayChannel> channel;
    std::unordered_set<ConnId> joined;  // the relay's own ids
    std::unordered_set<ConnId> full;
    std::unordered_map<ConnId, std::function<void()>> space_wanted;
  };
  // A ConnId names its relay in the bits above kRelayShift.
  static constexpr int kRelayShift = 40;
  static ConnId global_id(std::size_t relay, ConnId local) {
    return (static_cast<ConnId>(relay + 1) << kRelayShift) | local;
  }
  Relay* relay_of(ConnId id, ConnId* local);
  const Relay* relay_of(ConnId id, ConnId* local) const;

  void spawn(asio::io_context& io, std::size_t index, int listener_fd, const std::string& setup);
  void on_frame(std::size_t index, const Frame& frame);
  void on_relay_closed(std::size_t index, const std::string& reason);
  void give_space(Relay& relay, ConnId local);
  void reap();
  void send_heartbeats();

  Callbacks callbacks_;
  std::uint16_t port_ = 0;
  std::vector<Relay> relays_;
  // Tells the relays this process's loop still runs (they end after the
  // heartbeat timeout without it, as agents do).
  asio::steady_timer heartbeat_timer_;
  std::chrono::milliseconds heartbeat_interval_;
  bool stopped_ = false;
};

}  // namespace dlaunch
