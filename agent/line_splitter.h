// Splits a rank's output stream into lines. A line longer than the limit is cut
// into pieces of at most that size (never dropped); a last line without its
// newline is delivered by finish() when the stream ends.
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace dlaunch {

class LineSplitter {
 public:
  using Sink = std::function<void(std::string_view line)>;

  explicit LineSplitter(std::size_t max_line = 64 * 1024) : max_line_(max_line) {}

  void feed(std::string_view bytes, const Sink& sink);
  void finish(const Sink& sink);

 private:
  std::size_t max_line_;
  std::string pending_;
};

}  // namespace dlaunch
