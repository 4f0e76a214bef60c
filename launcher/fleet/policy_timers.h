// A policy's named timers on one io_context, for the one runner
// (fleet_runner.h): `which` is any value of the policy's timer enum. Arming
// one again replaces its deadline, and a cancelled or replaced wait never
// calls back. On common/clock.h's clock, which a unit test can move; the test
// reads what is armed with time_left and expiries.
#pragma once

#include <asio.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "common/clock.h"

namespace dlaunch {

class PolicyTimers {
 public:
  explicit PolicyTimers(asio::io_context& io) : io_(io) {}

  template <class Which>
  void arm(Which which, std::chrono::milliseconds after, std::function<void()> on_expiry) {
    auto& one = at(index(which));
    one.timer.expires_after(after);
    one.armed = true;
    const auto generation = ++one.generation;
    // A wait that had completed but not yet called back when it was replaced
    // or cancelled ends here: only the latest arming's wait may call back.
    one.timer.async_wait(
        [&one, generation, on_expiry = std::move(on_expiry)](const asio::error_code& ec) {
          if (ec || generation != one.generation) return;
          one.armed = false;
          ++one.expiries;
          on_expiry();
        });
  }
  template <class Which>
  void cancel(Which which) {
    cancel_index(index(which));
  }
  void cancel_all() {
    for (std::size_t i = 0; i < timers_.size(); ++i) cancel_index(i);
  }
  // How long until `which` fires; nullopt when it is not armed.
  template <class Which>
  std::optional<std::chrono::milliseconds> time_left(Which which) const {
    const One* one = find(index(which));
    if (one == nullptr || !one->armed) return std::nullopt;
    return std::chrono::duration_cast<std::chrono::milliseconds>(one->timer.expiry() -
                                                                 SteadyClock::now());
  }
  // How many times `which` has fired.
  template <class Which>
  std::uint64_t expiries(Which which) const {
    const One* one = find(index(which));
    return one == nullptr ? 0 : one->expiries;
  }

 private:
  struct One {
    explicit One(asio::io_context& io) : timer(io) {}
    Timer timer;
    bool armed = false;
    std::uint64_t generation = 0;  // of the latest arm or cancel
    std::uint64_t expiries = 0;
  };
  template <class Which>
  static std::size_t index(Which which) {
    return static_cast<std::size_t>(which);
  }
  // Made when first armed: a policy names its timers, not how many it has.
  One& at(std::size_t i) {
    while (timers_.size() <= i) timers_.push_back(std::make_unique<One>(io_));
    return *timers_[i];
  }
  const One* find(std::size_t i) const { return i < timers_.size() ? timers_[i].get() : nullptr; }
  void cancel_index(std::size_t i) {
    if (i >= timers_.size()) return;
    auto& one = *timers_[i];
    one.timer.cancel();
    one.armed = false;
    ++one.generation;
  }

  asio::io_context& io_;
  std::vector<std::unique_ptr<One>> timers_;  // unique_ptr: waits hold a reference
};

}  // namespace dlaunch
