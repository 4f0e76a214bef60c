// ProbeListener out of descriptors: it pauses between tries instead of
// spinning on a queue it cannot take, and answers the queued probe once a
// descriptor is free again.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/resource.h>

#include "agent/probe_listener.h"

using namespace dlaunch;

namespace {

// Lowers the soft descriptor limit to the lowest free descriptor number, so
// the next open or accept fails with EMFILE; restores it when it goes.
class DescriptorsExhausted {
 public:
  DescriptorsExhausted() {
    REQUIRE(::getrlimit(RLIMIT_NOFILE, &saved_) == 0);
    int lowest_free = 0;
    while (::fcntl(lowest_free, F_GETFD) != -1) ++lowest_free;
    rlimit lowered = saved_;
    lowered.rlim_cur = static_cast<rlim_t>(lowest_free);
    REQUIRE(::setrlimit(RLIMIT_NOFILE, &lowered) == 0);
  }
  ~DescriptorsExhausted() { restore(); }
  void restore() { ::setrlimit(RLIMIT_NOFILE, &saved_); }
  DescriptorsExhausted(const DescriptorsExhausted&) = delete;
  DescriptorsExhausted& operator=(const DescriptorsExhausted&) = delete;

 private:
  rlimit saved_{};
};

// UBSan's vptr check, on a miss in its cache of checked types, tests that the
// vtable is readable by writing it into a pipe: with no descriptor left that
// fails and it reports asio's scheduler as an object of the wrong type. An
// event loop run beforehand puts the scheduler's checks in that cache.
void cache_event_loop_type_checks() {
  asio::io_context warm;
  asio::steady_timer timer(warm, std::chrono::milliseconds(1));
  timer.async_wait([](const asio::error_code&) {});
  warm.run();
}

}  // namespace

TEST_CASE("out of descriptors, the probe listener pauses, then answers the waiting probe") {
  cache_event_loop_type_checks();
  asio::io_context io;
  ProbeListener listener(io);
  REQUIRE(listener.port() != 0);
  asio::ip::tcp::socket prober(io);
  prober.connect({asio::ip::address_v4::loopback(), listener.port()});
  char answer = 0;
  bool answered = false;
  prober.async_read_some(asio::buffer(&answer, 1), [&](const asio::error_code& ec, std::size_t n) {
    answered = !ec && n == 1;
    if (answered) io.stop();
  });

  DescriptorsExhausted exhausted;
  const auto window = ProbeListener::kPauseAfterFailure * 6;
  io.run_for(window);
  CHECK_FALSE(answered);
  // One failure per pause at most: a listener that re-armed at once would
  // have failed thousands of times in the same window.
  CHECK(listener.accept_failures() >= 1);
  CHECK(listener.accept_failures() <= 7);

  exhausted.restore();
  io.run_for(std::chrono::seconds(3));
  CHECK(answered);
  CHECK(answer == ProbeListener::kProbeAnswer);
}

TEST_CASE("the probe listener holds at most max_open connections, each for its lifetime") {
  asio::io_context io;
  ProbeListener listener(io, 0, {.max_open = 3, .lifetime = std::chrono::milliseconds(300)});
  REQUIRE(listener.port() != 0);
  // Strangers that connect and never close.
  std::vector<asio::ip::tcp::socket> held;
  for (int i = 0; i < 5; ++i) {
    held.emplace_back(io).connect({asio::ip::address_v4::loopback(), listener.port()});
    io.run_for(std::chrono::milliseconds(50));
  }
  CHECK(listener.open_connections() == 3);
  // The two oldest were closed to make room; each had its answer first.
  for (int i = 0; i < 2; ++i) {
    char answer[2] = {};
    asio::error_code ec;
    const auto n = asio::read(held[static_cast<std::size_t>(i)], asio::buffer(answer), ec);
    CHECK(n == 1);
    CHECK(answer[0] == ProbeListener::kProbeAnswer);
    CHECK(ec == asio::error::eof);
  }
  // A real probe is still answered at once.
  asio::ip::tcp::socket prober(io);
  prober.connect({asio::ip::address_v4::loopback(), listener.port()});
  io.run_for(std::chrono::milliseconds(50));
  CHECK(prober.available() == 1);
  // Past their lifetime, those left are closed whatever they do.
  for (int i = 0; i < 20 && listener.open_connections() > 0; ++i)
    io.run_for(std::chrono::milliseconds(100));
  CHECK(listener.open_connections() == 0);
}
