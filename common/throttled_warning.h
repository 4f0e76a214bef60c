// A warning that a flood could repeat thousands of times a second (accept
// failures, wrong secrets from strangers): said at most once per period, the
// next one saying how many went unsaid. What a log can hold stays bounded
// whatever a peer sends.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>

namespace dlaunch {

class ThrottledWarning {
 public:
  explicit ThrottledWarning(std::chrono::steady_clock::duration period) : period_(period) {}

  // `text` to say now, with the count left unsaid since the last; nullopt
  // while the period since the last is not over (counted).
  std::optional<std::string> say(std::string text) {
    const auto now = std::chrono::steady_clock::now();
    if (said_ && now - last_ < period_) {
      ++unsaid_;
      return std::nullopt;
    }
    if (unsaid_ > 0) text += " (and " + std::to_string(unsaid_) + " more since the last warning)";
    said_ = true;
    last_ = now;
    unsaid_ = 0;
    return text;
  }

 private:
  std::chrono::steady_clock::duration period_;
  bool said_ = false;
  std::chrono::steady_clock::time_point last_{};
  std::size_t unsaid_ = 0;
};

}  // namespace dlaunch
