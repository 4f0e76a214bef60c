// common/clock.h's test clock: what the tests that drive an event loop by hand
// rely on.
#include "common/clock.h"

#include <doctest/doctest.h>

#include <asio/io_context.hpp>
#include <chrono>
#include <thread>

using namespace dlaunch;
using std::chrono::milliseconds;
using std::chrono::seconds;

TEST_CASE("a frozen test clock stands still but for advance_test_clock, and never runs back") {
  SteadyClock::time_point frozen_at;
  {
    FrozenTestClock frozen;
    frozen_at = SteadyClock::now();
    std::this_thread::sleep_for(milliseconds(20));
    CHECK(SteadyClock::now() == frozen_at);
    advance_test_clock(seconds(30));
    CHECK(SteadyClock::now() - frozen_at == seconds(30));
  }
  // Thawed: it goes on from where it stood.
  const auto thawed = SteadyClock::now();
  CHECK(thawed >= frozen_at + seconds(30));
  CHECK(thawed < frozen_at + seconds(31));
  std::this_thread::sleep_for(milliseconds(20));
  CHECK(SteadyClock::now() > thawed);
}

TEST_CASE("under a frozen clock a timer fires once the clock is moved past it, not before") {
  FrozenTestClock frozen;
  asio::io_context io;
  Timer timer(io);
  bool fired = false;
  timer.expires_after(seconds(10));
  timer.async_wait([&](const asio::error_code& ec) { fired = !ec; });
  io.run_for(milliseconds(30));
  CHECK_FALSE(fired);
  advance_test_clock(seconds(10));
  io.restart();
  for (int i = 0; i < 1000 && !fired; ++i) io.run_one_for(milliseconds(5));
  CHECK(fired);
}
