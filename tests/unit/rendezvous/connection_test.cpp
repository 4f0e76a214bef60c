// Connection's send path over real loopback TCP: closing while a write is in
// flight, the bounded output lane and its space callback, and control frames
// overtaking queued output; the lazy receive timeout, and the keepalive options
// accepted sockets inherit from their listener.
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include <asio.hpp>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "protocol/frame.h"
#include "protocol/messages.h"
#include "rendezvous/connection.h"

using namespace dlaunch;

namespace {

// A connected pair: `ours` wrapped in a Connection, `peer` a plain socket the
// test reads (or does not read) by hand.
struct Pair {
  asio::io_context io;
  std::shared_ptr<Connection> conn;
  asio::ip::tcp::socket peer{io};

  Pair() {
    asio::ip::tcp::acceptor acceptor(io, {asio::ip::make_address("127.0.0.1"), 0});
    asio::ip::tcp::socket ours(io);
    ours.connect(acceptor.local_endpoint());
    acceptor.accept(peer);
    // Small kernel buffers so that a few hundred KiB fill the path.
    asio::error_code ec;
    ours.set_option(asio::socket_base::send_buffer_size(16 * 1024), ec);
    peer.set_option(asio::socket_base::receive_buffer_size(16 * 1024), ec);
    conn = std::make_shared<Connection>(std::move(ours), kMaxFrame, "peer");
  }

  // Reads and decodes everything the connection sent, until it closes.
  std::vector<proto::Message> drain_peer() {
    std::vector<proto::Message> got;
    FrameDecoder decoder(kMaxFrame);
    std::array<char, 64 * 1024> buffer{};
    asio::error_code ec;
    for (;;) {
      const auto n = peer.read_some(asio::buffer(buffer), ec);
      if (ec) break;
      decoder.feed(std::string_view(buffer.data(), n));
      for (;;) {
        auto r = decoder.next();
        if (r.status != FrameDecoder::Status::ok) break;
        if (auto m = proto::decode(r.frame.type, r.frame.payload)) got.push_back(std::move(*m));
      }
    }
    return got;
  }
};

proto::LogLine line_of(std::size_t bytes, int rank = 0) {
  return proto::LogLine{rank, proto::Stream::out, std::string(bytes, 'x')};
}

}  // namespace

TEST_CASE("connection: a close right after a write completes touches no freed buffer") {
  // The write of a small frame completes at once; its handler is queued but
  // not yet run when close() empties the queues. The handler must then do
  // nothing (before the fix it popped the emptied queue: a double free under
  // the AddressSanitizer build).
  for (int i = 0; i < 50; ++i) {
    Pair pair;
    std::string reason;
    pair.conn->start({[](proto::Message&&) {}, [&](const std::string& r) { reason = r; }});
    pair.conn->send(proto::Stop{});
    pair.conn->send(line_of(100));
    pair.conn->close("closed by test");
    pair.io.run();
    CHECK(reason == "closed by test");
    CHECK(pair.conn->closed());
  }
}

TEST_CASE("connection: a close while a large write is pending stops cleanly") {
  Pair pair;
  int closes = 0;
  pair.conn->start({[](proto::Message&&) {}, [&](const std::string&) { ++closes; }});
  for (int i = 0; i < 64; ++i) pair.conn->send(line_of(60 * 1024));
  pair.io.poll();  // the first write is now stuck on the peer's full buffer
  CHECK(pair.conn->output_queued_bytes() > 0);
  pair.conn->close("gone");
  pair.io.run();
  CHECK(closes == 1);
  CHECK(pair.conn->output_queued_bytes() == 0);
}

TEST_CASE("connection: the output lane is bounded and says when it has room again") {
  Pair pair;
  pair.conn->set_output_limit(256 * 1024);
  pair.conn->start({[](proto::Message&&) {}, [](const std::string&) {}});
  // The way the agent sends: queue, and hold back once the lane is full.
  int accepted = 0;
  while (!pair.conn->output_full()) {
    pair.conn->send(line_of(8 * 1024));
    ++accepted;
    REQUIRE(accepted < 10'000);  // the peer reads nothing: the lane must fill
  }
  CHECK(pair.conn->output_full());
  CHECK(pair.conn->output_queued_bytes() <= 256 * 1024 + 8 * 1024 + 64);
  bool space = false;
  pair.conn->on_output_space([&] {
    space = true;
    pair.conn->close_after_flush("done");
  });
  // The peer starts reading: the lane drains and the callback fires once.
  std::thread reader([&] {
    const auto got = pair.drain_peer();
    CHECK(got.size() >= static_cast<std::size_t>(accepted));
  });
  pair.io.run();
  reader.join();
  CHECK(space);
}

TEST_CASE("connection: log lines written into shared buffers arrive whole, in order, as sent") {
  Pair pair;
  pair.conn->start({[](proto::Message&&) {}, [](const std::string&) {}});
  // Lines of every length from empty to the largest piece an agent sends, both
  // streams and every ending; the peer reads nothing until all are queued, so
  // most of them share buffers.
  std::vector<proto::LogLine> sent;
  for (int i = 0; i < 3000; ++i) {
    const std::size_t length = i % 97 == 0 ? proto::kMaxLogChunk : (i * 37) % 300;
    sent.push_back({i, i % 3 == 0 ? proto::Stream::err : proto::Stream::out,
                    std::string(length, static_cast<char>('a' + i % 26)),
                    static_cast<proto::LineEnd>(i % 4)});
    pair.conn->send_log_line(sent.back().rank, sent.back().stream, sent.back().text,
                             sent.back().end);
  }
  pair.conn->send(proto::RankExit{7, 0, 0});
  pair.conn->close_after_flush("done");
  std::vector<proto::Message> got;
  std::thread reader([&] { got = pair.drain_peer(); });
  pair.io.run();
  reader.join();
  REQUIRE(got.size() == sent.size() + 1);
  for (std::size_t i = 0; i < sent.size(); ++i) {
    const auto* line = std::get_if<proto::LogLine>(&got[i]);
    REQUIRE(line != nullptr);
    CHECK(line->rank == sent[i].rank);
    CHECK(line->stream == sent[i].stream);
    CHECK(line->text == sent[i].text);
    CHECK(line->end == sent[i].end);
  }
  CHECK(std::holds_alternative<proto::RankExit>(got.back()));
}

TEST_CASE("connection: heartbeats overtake queued output; a rank's exit does not") {
  Pair pair;
  pair.conn->start({[](proto::Message&&) {}, [](const std::string&) {}});
  constexpr int kLines = 200;
  for (int i = 0; i < kLines; ++i) pair.conn->send(line_of(16 * 1024, i));
  pair.io.poll();
  proto::RankExit exit;
  exit.rank = 7;
  exit.exit_code = 3;
  pair.conn->send(exit);
  pair.conn->send(proto::Heartbeat{});
  pair.conn->close_after_flush("done");
  std::vector<proto::Message> got;
  std::thread reader([&] { got = pair.drain_peer(); });
  pair.io.run();
  reader.join();
  REQUIRE(got.size() == kLines + 2);
  std::size_t heartbeat_at = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (std::holds_alternative<proto::Heartbeat>(got[i])) heartbeat_at = i;
  }
  // Only what was already in flight (one batch of at most 256 KiB, 16 lines)
  // goes before the heartbeat.
  CHECK(heartbeat_at <= kMaxWriteBatch / (16 * 1024));
  // The exit comes after every line queued before it, and the lines in order.
  CHECK(std::holds_alternative<proto::RankExit>(got.back()));
  int expected_rank = 0;
  for (const auto& m : got) {
    if (const auto* l = std::get_if<proto::LogLine>(&m)) CHECK(l->rank == expected_rank++);
  }
  CHECK(expected_rank == kLines);
}

TEST_CASE("connection: the receive timeout counts from the latest message, not the first") {
  // A peer that sends every 100 ms keeps a 600 ms timeout from ever firing,
  // though the timer was armed only once; when it falls silent the connection
  // closes with the reason a user reads. On the test clock: a loaded machine
  // cannot stretch a 100 ms gap past the timeout.
  FrozenTestClock frozen;
  Pair pair;
  std::string reason;
  int received = 0;
  pair.conn->start(
      {[&](proto::Message&&) { ++received; }, [&](const std::string& r) { reason = r; }});
  pair.conn->set_receive_timeout(std::chrono::milliseconds(600));
  const std::string frame = proto::encode(proto::Stop{});
  // Runs the loop until `done`, giving up (and failing) after 10 s of real time.
  auto run_until = [&](auto done) {
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!done() && std::chrono::steady_clock::now() < give_up)
      pair.io.run_one_for(std::chrono::milliseconds(5));
    return done();
  };
  for (int sent = 1; sent <= 15; ++sent) {  // 1.5 s of traffic
    asio::write(pair.peer, asio::buffer(frame));
    REQUIRE(run_until([&] { return received == sent; }));
    advance_test_clock(std::chrono::milliseconds(100));
    pair.io.run_for(std::chrono::milliseconds(3));  // a due timer would fire here
    REQUIRE_FALSE(pair.conn->closed());
  }
  // Then silence: 600 ms after the last message, not after the first.
  advance_test_clock(std::chrono::milliseconds(490));
  pair.io.run_for(std::chrono::milliseconds(3));
  CHECK_FALSE(pair.conn->closed());
  advance_test_clock(std::chrono::milliseconds(20));
  CHECK(run_until([&] { return pair.conn->closed(); }));
  CHECK(received == 15);
  CHECK(reason.find("no message for") == 0);
}

TEST_CASE("connection: keepalive set on a listener reaches the sockets it accepts") {
  // The server sets these once on its acceptor instead of five system calls
  // per agent; this holds it to that.
  asio::io_context io;
  asio::ip::tcp::acceptor acceptor(io);
  acceptor.open(asio::ip::tcp::v4());
  enable_keepalive(acceptor.native_handle());
  acceptor.bind({asio::ip::make_address("127.0.0.1"), 0});
  acceptor.listen();
  asio::ip::tcp::socket client(io), accepted(io);
  client.connect(acceptor.local_endpoint());
  acceptor.accept(accepted);
  asio::socket_base::keep_alive keep_alive;
  asio::ip::tcp::no_delay no_delay;
  accepted.get_option(keep_alive);
  accepted.get_option(no_delay);
  CHECK(keep_alive.value());
  CHECK(no_delay.value());
  int idle = 0;
  socklen_t size = sizeof idle;
  ::getsockopt(accepted.native_handle(), IPPROTO_TCP, TCP_KEEPIDLE, &idle, &size);
  CHECK(idle == 15);
}

TEST_CASE("connection: reads start small and grow for a busy peer, losing no byte") {
  // Thousands of quiet agents cost 4 KiB of read buffer each; a peer whose
  // stream fills the buffer gets the full 64 KiB, and frames cut across
  // reads of every size arrive whole and in order.
  Pair pair;
  std::vector<proto::LogLine> got;
  std::size_t quiet_buffer = 0;
  pair.conn->start({[&](proto::Message&& m) {
                      if (auto* l = std::get_if<proto::LogLine>(&m)) got.push_back(*l);
                      if (got.size() == 1) quiet_buffer = pair.conn->read_buffer_bytes();
                    },
                    [](const std::string&) {}});
  asio::write(pair.peer, asio::buffer(proto::encode(line_of(100, 0))));
  while (got.empty()) pair.io.run_one();
  constexpr int kLines = 300;
  std::string burst;
  for (int i = 1; i <= kLines; ++i) burst += proto::encode(line_of(1000 + 37 * i, i));
  std::thread writer([&] {
    asio::write(pair.peer, asio::buffer(burst));
    pair.peer.shutdown(asio::ip::tcp::socket::shutdown_send);
  });
  pair.io.run();
  writer.join();
  CHECK(quiet_buffer == Connection::kFirstRead);
  CHECK(pair.conn->read_buffer_bytes() == Connection::kReadBuffer);
  REQUIRE(got.size() == kLines + 1);
  for (int i = 0; i <= kLines; ++i) {
    CHECK(got[static_cast<std::size_t>(i)].rank == i);
    CHECK(got[static_cast<std::size_t>(i)].text.size() ==
          static_cast<std::size_t>(i == 0 ? 100 : 1000 + 37 * i));
  }
}
