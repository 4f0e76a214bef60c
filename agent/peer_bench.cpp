#include "agent/peer_bench.h"

#include <array>
#include <chrono>
#include <memory>
#include "agent/socket_deadline.h"
#include "rendezvous/host_endpoints.h"

namespace dlaunch {
namespace {

using Clock = std::chrono::steady_clock;

// How long the peer gets, after our last byte, to read the rest and close.
constexpr std::chrono::seconds kDrainGrace{5};
constexpr std::size_t kChunk = 256 * 1024;

struct TestRun {
  proto::PeerTestReport report;
  std::size_t pending = 0;
  PeerTestDone done;
  std::array<char, kChunk> data{};  // what is written: zeros, shared by every target

  void finished_one() {
    if (--pending == 0) done(std::move(report));
  }
};

struct Transfer : std::enable_shared_from_this<Transfer> {
  Transfer(asio::io_context& io, std::shared_ptr<TestRun> r, std::size_t i)
      : run(std::move(r)), index(i), socket(io), deadline(io.get_executor()) {}

  std::shared_ptr<TestRun> run;
  std::size_t index;
  asio::ip::tcp::socket socket;
  SocketDeadline deadline;
  Clock::time_point started = Clock::now();
  Clock::time_point connected;
  Clock::time_point stop_writing;
  std::chrono::milliseconds duration{0};
  std::array<char, 64> sink{};
  bool over = false;

  proto::PeerResult& result() { return run->report.results[index]; }

  void start(const proto::PeerTarget& target, std::chrono::milliseconds connect_timeout,
             std::chrono::milliseconds test_duration) {
    duration = test_duration;
    result().node = target.node;
    deadline.arm(socket, connect_timeout, shared_from_this());
    auto self = shared_from_this();
    // The coordinator sends addresses; a name (in /etc/hosts) is looked up
    // without NSS, which this static agent cannot load.
    const auto endpoints = endpoints_without_nss(target.address, target.port);
    if (endpoints.empty()) return finish(lookup_failure(target.address));
    asio::async_connect(socket, endpoints,
                        [self](const asio::error_code& e, const asio::ip::tcp::endpoint&) {
                          self->on_connected(e);
                        });
  }

  void on_connected(const asio::error_code& ec) {
    if (over) return;
    if (deadline.expired()) return finish("timed out");
    if (ec) return finish(connect_failure(ec));
    connected = Clock::now();
    result().reached = true;
    result().rtt_us = static_cast<std::int32_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(connected - started).count());
    if (duration.count() == 0) return finish("");
    stop_writing = connected + duration;
    deadline.arm(socket, duration + kDrainGrace, shared_from_this());
    write();
  }

  void write() {
    if (Clock::now() >= stop_writing) return drain();
    auto self = shared_from_this();
    socket.async_write_some(
        asio::buffer(run->data), [self](const asio::error_code& ec, std::size_t n) {
          if (self->over) return;
          self->result().bytes += n;
          if (ec) {
            return self->finish(self->deadline.expired() ? "the peer stopped reading"
                                                         : "transfer cut: " + ec.message());
          }
          self->write();
        });
  }

  // Our side closes first (FIN), so the TIME_WAIT stays here and the peer's
  // port stays free to bind, as with the probes.
  void drain() {
    asio::error_code ignored;
    socket.shutdown(asio::socket_base::shutdown_send, ignored);
    drain_more();
  }

  void drain_more() {
    auto self = shared_from_this();
    socket.async_read_some(asio::buffer(sink), [self](const asio::error_code& ec, std::size_t) {
      if (self->over) return;
      if (!ec) return self->drain_more();
      if (ec == asio::error::eof) {
        self->result().elapsed_us =
            std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - self->connected)
                .count();
        return self->finish("");
      }
      self->finish(self->deadline.expired() ? "the peer did not confirm the data in time"
                                            : "transfer cut: " + ec.message());
    });
  }

  void finish(const std::string& error) {
    if (over) return;
    over = true;
    deadline.cancel();
    result().error = error.substr(0, proto::kMaxProbeError);
    asio::error_code ignored;
    socket.close(ignored);
    run->finished_one();
  }
};

}  // namespace

void run_peer_bench(asio::io_context& io, const proto::PeerTest& test, PeerTestDone done) {
  auto run = std::make_shared<TestRun>();
  run->report.round = test.round;
  run->report.results.resize(test.targets.size());
  run->pending = test.targets.size();
  run->done = std::move(done);
  if (test.targets.empty()) {
    asio::post(io, [run] { run->done(std::move(run->report)); });
    return;
  }
  for (std::size_t i = 0; i < test.targets.size(); ++i) {
    std::make_shared<Transfer>(io, run, i)
        ->start(test.targets[i], std::chrono::milliseconds(test.timeout_ms),
                std::chrono::milliseconds(test.duration_ms));
  }
}

}  // namespace dlaunch
