// The frames between the coordinator and its relays: each kind round-trips
// with its connection and body; anything else is refused, not guessed at.
#include <doctest/doctest.h>

#include "protocol/frame.h"
#include "protocol/messages.h"
#include "rendezvous/relay_wire.h"

using namespace dlaunch;

namespace {

// The frame points into `decoder`'s buffer.
Frame decode_one(FrameDecoder& decoder, const std::string& bytes) {
  decoder.feed(bytes);
  auto result = decoder.next();
  REQUIRE(result.status == FrameDecoder::Status::ok);
  CHECK(decoder.buffered() == 0);
  return result.frame;
}

}  // namespace

TEST_CASE("relay frames carry their kind, connection and body") {
  const ConnId conn = (ConnId{7} << 40) | 123'456;
  for (auto kind : {RelayKind::joined, RelayKind::message, RelayKind::closed, RelayKind::full,
                    RelayKind::space, RelayKind::send, RelayKind::close, RelayKind::pause_reading,
                    RelayKind::resume_reading, RelayKind::heartbeat}) {
    const std::string body = kind == RelayKind::full ? "" : std::string("a\0b", 3);
    FrameDecoder decoder(kMaxRelayFrame);
    const Frame frame = decode_one(decoder, encode_relay(kind, conn, body));
    auto relayed = decode_relay(frame);
    REQUIRE(relayed);
    CHECK(relayed->kind == kind);
    CHECK(relayed->conn == conn);
    CHECK(relayed->body == body);
  }
}

TEST_CASE("relay frames of an unknown kind or without a whole header are refused") {
  CHECK_FALSE(decode_relay(Frame{0, std::string(8, '\0')}));
  CHECK_FALSE(decode_relay(Frame{99, std::string(8, '\0')}));
  CHECK_FALSE(decode_relay(Frame{static_cast<std::uint8_t>(RelayKind::send), "short"}));
  CHECK(decode_relay(Frame{static_cast<std::uint8_t>(RelayKind::send), std::string(8, '\0')}));
}

TEST_CASE("a relay's setup round-trips, secret bytes and all; a damaged one is refused") {
  RelaySetup setup;
  setup.secret = std::string("\0\xff secret\n", 10);
  setup.handshake_timeout = std::chrono::milliseconds(1234);
  setup.heartbeat_timeout = std::chrono::milliseconds(56'789);
  setup.max_pending = 21'024;
  setup.max_sessions = 19'936;
  setup.log_level = 2;
  const std::string body = encode_setup(setup);
  auto back = decode_setup(body);
  REQUIRE(back);
  CHECK(back->secret == setup.secret);
  CHECK(back->handshake_timeout == setup.handshake_timeout);
  CHECK(back->heartbeat_timeout == setup.heartbeat_timeout);
  CHECK(back->max_pending == setup.max_pending);
  CHECK(back->max_sessions == setup.max_sessions);
  CHECK(back->log_level == 2);
  CHECK_FALSE(decode_setup(body + "x"));
  CHECK_FALSE(decode_setup(body.substr(0, body.size() - 1)));
  setup.max_sessions = 0;  // a relay that may hold nothing would accept nothing
  CHECK_FALSE(decode_setup(encode_setup(setup)));
}

TEST_CASE("a relayed message is exactly one valid protocol frame") {
  proto::Join join;
  join.node_rank = 19'999;
  join.host = "node-19999";
  join.nnodes = 20'000;
  const std::string frame = proto::encode(proto::Message{join});
  auto back = decode_message_frame(frame);
  REQUIRE(back);
  auto* j = std::get_if<proto::Join>(&*back);
  REQUIRE(j);
  CHECK(j->node_rank == 19'999);
  CHECK(j->host == "node-19999");
  CHECK_FALSE(decode_message_frame(frame.substr(0, frame.size() - 1)));
  CHECK_FALSE(decode_message_frame(frame + frame));
  CHECK_FALSE(decode_message_frame(encode_frame(200, "")));
}
