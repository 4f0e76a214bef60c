// The frames between the coordinator and its rendezvous relays, over a local
// socket pair: encode_frame(kind, [u64 conn][body]). A relay does the agents'
// handshakes and holds their connections; it forwards what they send and
// what is sent to them as whole protocol frames, named by the relay's ConnId.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "protocol/frame.h"
#include "protocol/messages.h"
#include "rendezvous/state.h"

namespace dlaunch {

enum class RelayKind : std::uint8_t {
  // relay -> coordinator
  joined = 1,   // body: the agent's Join, encoded
  message = 2,  // body: a later message of the agent, encoded
  closed = 3,   // body: why the agent's connection closed
  full = 4,     // the agent's output lane reached its limit
  space = 5,    // it drained to half after that
  // coordinator -> relay
  setup = 16,           // conn 0; body: RelaySetup, the first frame
  send = 17,            // body: a message for the agent, encoded
  close = 18,           // body: why; closed once what is queued is written
  pause_reading = 19,   // conn 0
  resume_reading = 20,  // conn 0
  heartbeat = 21,       // conn 0: the coordinator is alive (its loop runs)
};

struct RelayFrame {
  RelayKind kind = RelayKind::message;
  ConnId conn = 0;
  std::string_view body;  // into the decoded Frame's payload
};

// Room for one protocol frame of kMaxFrame and the relay's header.
inline constexpr std::size_t kMaxRelayFrame = kMaxFrame + 64;

std::string encode_relay(RelayKind kind, ConnId conn, std::string_view body);
// Nothing when the kind is unknown or the header is short.
std::optional<RelayFrame> decode_relay(const Frame& frame);

// What a relay needs before it accepts (the secret never goes on a command
// line or into the environment).
struct RelaySetup {
  std::string secret;
  std::chrono::milliseconds handshake_timeout{10'000};
  std::chrono::milliseconds heartbeat_timeout{15'000};
  std::uint64_t max_pending = 1024;
  std::uint64_t max_sessions = 1024;
  std::uint8_t log_level = 1;
};

std::string encode_setup(const RelaySetup& setup);
std::optional<RelaySetup> decode_setup(std::string_view body);

// A whole encoded protocol frame (proto::encode's result) back into its
// message; nothing when it is not exactly one valid frame.
std::optional<proto::Message> decode_message_frame(std::string_view frame);

}  // namespace dlaunch
