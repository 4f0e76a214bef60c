#include "common/clock.h"

#include <algorithm>
#include <atomic>

namespace dlaunch {
namespace {

std::atomic<SteadyClock::rep> offset{0};
std::atomic<bool> moved{false};

}  // namespace

SteadyClock::time_point SteadyClock::now() noexcept {
  return time_point(std::chrono::steady_clock::now().time_since_epoch() +
                    duration(offset.load(std::memory_order_relaxed)));
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

}  // namespace dlaunch
