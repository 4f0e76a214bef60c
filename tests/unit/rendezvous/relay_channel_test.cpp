// RelayChannel over a real socket pair: frames arrive whole and in order both
// ways, over_limit and on_space bound what a sender queues, and a close while
// a write is in flight touches nothing afterwards.
#include <doctest/doctest.h>
#include <sys/socket.h>

#include <asio.hpp>
#include <memory>
#include <string>
#include <vector>

#include "protocol/frame.h"
#include "rendezvous/relay_channel.h"

using namespace dlaunch;

namespace {

struct ChannelPair {
  asio::io_context io;
  std::shared_ptr<RelayChannel> a;
  std::shared_ptr<RelayChannel> b;

  ChannelPair() {
    int ends[2];
    REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) == 0);
    a = std::make_shared<RelayChannel>(io, ends[0], 1 << 20);
    b = std::make_shared<RelayChannel>(io, ends[1], 1 << 20);
  }
};

}  // namespace

TEST_CASE("relay channel: thousands of frames arrive whole and in order, both ways") {
  ChannelPair p;
  std::vector<std::string> at_a, at_b;
  p.a->start({[&](Frame&& f) { at_a.emplace_back(f.payload); }, [](const std::string&) {}, {}});
  p.b->start({[&](Frame&& f) {
                at_b.emplace_back(f.payload);
                if (at_b.size() == 5000) p.b->send(encode_frame(1, "done"));
              },
              [](const std::string&) {},
              {}});
  for (int i = 0; i < 5000; ++i)
    p.a->send(
        encode_frame(1, std::to_string(i) + std::string(static_cast<std::size_t>(i % 300), 'x')));
  p.io.run_for(std::chrono::seconds(10));
  REQUIRE(at_b.size() == 5000);
  for (int i = 0; i < 5000; ++i)
    CHECK(at_b[static_cast<std::size_t>(i)] ==
          std::to_string(i) + std::string(static_cast<std::size_t>(i % 300), 'x'));
  CHECK(at_a == std::vector<std::string>{"done"});
}

TEST_CASE("relay channel: over its limit until the reader catches up, then on_space once") {
  ChannelPair p;
  int spaces = 0;
  std::size_t received = 0;
  p.a->start({[](Frame&&) {}, [](const std::string&) {}, [&] { ++spaces; }});
  const std::string big(1 << 19, 'y');
  while (!p.a->over_limit()) p.a->send(encode_frame(2, big));
  CHECK(p.a->queued_bytes() >= RelayChannel::kDefaultLimit);
  // Nothing read yet: the queue stays over its limit.
  p.io.run_for(std::chrono::milliseconds(50));
  CHECK(p.a->over_limit());
  CHECK(spaces == 0);
  p.b->start({[&](Frame&&) { ++received; }, [](const std::string&) {}, {}});
  p.io.run_for(std::chrono::seconds(5));
  CHECK(spaces == 1);
  CHECK(p.a->queued_bytes() == 0);
  CHECK(received >= 32);
}

TEST_CASE("relay channel: a close with a write in flight, and the other end's close, once each") {
  ChannelPair p;
  int a_closed = 0, b_closed = 0;
  std::string b_reason;
  p.a->start({[](Frame&&) {}, [&](const std::string&) { ++a_closed; }, {}});
  p.b->start({[](Frame&&) {},
              [&](const std::string& r) {
                ++b_closed;
                b_reason = r;
              },
              {}});
  for (int i = 0; i < 64; ++i) p.a->send(encode_frame(3, std::string(1 << 18, 'z')));
  p.io.run_for(std::chrono::milliseconds(5));
  p.a->close("done here");
  p.a->close("again");
  p.a->send(encode_frame(3, "after close"));
  p.io.run_for(std::chrono::seconds(2));
  CHECK(a_closed == 1);
  CHECK(b_closed == 1);
  CHECK(p.a->closed());
  CHECK(p.b->closed());
}
