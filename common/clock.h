// The clock and timer of the event-loop code that tests drive by hand.
//
// SteadyClock reads std::chrono::steady_clock plus an offset that only a test
// moves (advance_test_clock), so that a unit test can put a timer's
// expiry behind it at once: no sleeps, and no margins that a loaded machine
// overruns. In a program that never calls it, Timer is asio::steady_timer in
// all but name: same time, same waits.
#pragma once

#include <asio/basic_waitable_timer.hpp>
#include <chrono>

namespace dlaunch {

struct SteadyClock {
  using duration = std::chrono::steady_clock::duration;
  using rep = duration::rep;
  using period = duration::period;
  using time_point = std::chrono::time_point<SteadyClock, duration>;
  static constexpr bool is_steady = true;
  static time_point now() noexcept;
};

// How long the event loop may sleep before a timer's expiry. Under a test's
// clock, no longer than a millisecond at a time: Asio arms its kernel timer
// with the time left by this clock, which a moved clock makes too long.
struct SteadyClockWaitTraits {
  static SteadyClock::duration to_wait_duration(const SteadyClock::duration& d);
  static SteadyClock::duration to_wait_duration(const SteadyClock::time_point& t);
};

using Timer = asio::basic_waitable_timer<SteadyClock, SteadyClockWaitTraits>;

// Tests only. use_test_clock() must come before the first timer is armed:
// from then on the event loop wakes every millisecond while a timer is
// pending, to look at a clock that advance_test_clock() moves forward.
void use_test_clock();
void advance_test_clock(SteadyClock::duration by);
// While a FrozenTestClock lives, the clock stands still but for
// advance_test_clock: a test that plays a whole job reads timers' deadlines
// exactly, and none fires because the machine was slow. Afterwards the clock
// goes on from where it stood, so it never runs backwards.
class FrozenTestClock {
 public:
  FrozenTestClock();
  ~FrozenTestClock();
  FrozenTestClock(const FrozenTestClock&) = delete;
  FrozenTestClock& operator=(const FrozenTestClock&) = delete;
};

}  // namespace dlaunch
