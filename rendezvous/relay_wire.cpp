#include "rendezvous/relay_wire.h"

#include "protocol/wire.h"

namespace dlaunch {

std::string encode_relay(RelayKind kind, ConnId conn, std::string_view body) {
  wire::Writer w;
  w.u64(conn);
  std::string payload = w.take();
  payload.append(body);
  return encode_frame(static_cast<std::uint8_t>(kind), payload);
}

std::optional<RelayFrame> decode_relay(const Frame& frame) {
  const auto kind = static_cast<RelayKind>(frame.type);
  switch (kind) {
    case RelayKind::joined:
    case RelayKind::message:
    case RelayKind::closed:
    case RelayKind::full:
    case RelayKind::space:
    case RelayKind::setup:
    case RelayKind::send:
    case RelayKind::close:
    case RelayKind::pause_reading:
    case RelayKind::resume_reading:
    case RelayKind::heartbeat:
      break;
    default:
      return std::nullopt;
  }
  std::string_view payload = frame.payload;
  wire::Reader r(payload.substr(0, 8));
  const ConnId conn = r.u64();
  if (!r.done()) return std::nullopt;
  return RelayFrame{kind, conn, payload.substr(8)};
}

std::string encode_setup(const RelaySetup& setup) {
  wire::Writer w;
  w.str(setup.secret);
  w.i64(setup.handshake_timeout.count());
  w.i64(setup.heartbeat_timeout.count());
  w.u64(setup.max_pending);
  w.u64(setup.max_sessions);
  w.u8(setup.log_level);
  return w.take();
}

std::optional<RelaySetup> decode_setup(std::string_view body) {
  wire::Reader r(body);
  RelaySetup s;
  s.secret = r.str();
  s.handshake_timeout = std::chrono::milliseconds(r.i64());
  s.heartbeat_timeout = std::chrono::milliseconds(r.i64());
  s.max_pending = r.u64();
  s.max_sessions = r.u64();
  s.log_level = r.u8();
  if (!r.done() || s.max_sessions == 0 || s.log_level > 3) return std::nullopt;
  return s;
}

std::optional<proto::Message> decode_message_frame(std::string_view frame) {
  FrameDecoder decoder(kMaxFrame);
  decoder.feed(frame);
  auto result = decoder.next();
  if (result.status != FrameDecoder::Status::ok || decoder.buffered() != 0) return std::nullopt;
  return proto::decode(result.frame.type, result.frame.payload);
}

}  // namespace dlaunch
