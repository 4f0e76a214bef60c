#include "common/clock.h"

#include <algorithm>
#include <atomic>

namespace dlaunch {
namespace {

std::atomic<SteadyClock::rep> offset{0};
std::atomic<bool> moved{false};
// Non-zero while frozen: steady_clock's reading when it froze.
std::atomic<SteadyClock::rep> frozen_at{0};

SteadyClock::rep real_now() {
  return std::chrono::duration_cast<SteadyClock::duration>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

SteadyClock::time_point SteadyClock::now() noexcept {
  const auto frozen = frozen_at.load(std::memory_order_relaxed);
  return time_point(
      duration((frozen != 0 ? frozen : real_now()) + offset.load(std::memory_order_relaxed)));
}

SteadyClock::duration SteadyClockWaitTraits::to_wait_duration(const SteadyClock::duration& d) {
  if (!moved.load(std::memory_order_relaxed)) return d;
  return std::min<SteadyClock::duration>(d, std::chrono::milliseconds(1));
}

SteadyClock::duration SteadyClockWaitTraits::to_wait_duration(const SteadyClock::time_point& t) {
  return to_wait_duration(t - SteadyClock::now());
}

void use_test_clock() {
  moved.store(true, std::memory_order_relaxed);
}

void advance_test_clock(SteadyClock::duration by) {
  use_test_clock();
  offset.fetch_add(by.count(), std::memory_order_relaxed);
}

FrozenTestClock::FrozenTestClock() {
  use_test_clock();
  frozen_at.store(real_now(), std::memory_order_relaxed);
}

FrozenTestClock::~FrozenTestClock() {
  // From the frozen reading on: the real time that passed meanwhile is not added.
  offset.fetch_add(frozen_at.exchange(0, std::memory_order_relaxed) - real_now(),
                   std::memory_order_relaxed);
}

}  // namespace dlaunch
