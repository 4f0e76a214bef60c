// What the coordinator asks of the rendezvous, whichever process holds the
// agents' connections: this one (RendezvousServer), or relay processes when
// one process may not open a descriptor per agent (RelayedRendezvous). Agents
// are named by ConnId either way; the handshake is done before on_join.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>

#include "protocol/messages.h"
#include "rendezvous/state.h"

namespace dlaunch {

class RendezvousService {
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
    // Connections held at once (handshakes included). At the limit the server
    // stops accepting until one closes, and the kernel keeps the next ones
    // queued for another process that accepts on the same listener.
    std::size_t max_sessions = std::numeric_limits<std::size_t>::max();
    // At max_sessions, a new connection evicts the oldest still in the
    // handshake instead of waiting: strangers holding every place cannot
    // lock a real agent out. Relays leave it off: there the kernel hands the
    // next connection to a relay with room.
    bool evict_when_full = false;
  };

  virtual ~RendezvousService() = default;

  virtual std::uint16_t port() const = 0;
  virtual void send(ConnId id, const proto::Message& message) = 0;
  // Closes after what is queued for the agent has been written.
  virtual void close(ConnId id, const std::string& reason) = 0;
  // A bulk sender to one agent (--sync) sends while output_full() is false,
  // then waits for on_output_space; an unknown or closed connection counts as
  // full, and its callback never fires.
  virtual bool output_full(ConnId id) const = 0;
  virtual void on_output_space(ConnId id, std::function<void()> callback) = 0;
  // Stops or resumes reading from every joined agent (the terminal cannot
  // keep up and the user asked that nothing be skipped).
  virtual void set_reading_paused(bool paused) = 0;
  // Stop accepting and close every connection.
  virtual void stop() = 0;
};

}  // namespace dlaunch
