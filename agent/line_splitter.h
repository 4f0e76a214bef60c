// Splits a rank's output stream into pieces that each say how they ended, so
// that the coordinator can write the rank's log with exactly the bytes the rank
// wrote and show progress bars as they move:
//   "\n" ends a line (newline); "\r" not followed by "\n" ends a progress
//   display segment (carriage_return); "\r\n" ends a line whose text keeps its
//   "\r"; a line longer than the limit is cut into pieces of at most that size
//   (continued, never dropped); what is left when the stream ends, or when the
//   rank has written nothing more for a while (flush_partial), goes out as
//   partial.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "protocol/messages.h"

namespace dlaunch {

class LineSplitter {
 public:
  using Sink = std::function<void(std::string_view text, proto::LineEnd end)>;

  explicit LineSplitter(std::size_t max_line = 64 * 1024) : max_line_(max_line) {}

  void feed(std::string_view bytes, const Sink& sink);
  // Delivers an unfinished line as partial. A lone "\r" at the very end stays:
  // the "\n" of a "\r\n" may be on its way.
  void flush_partial(const Sink& sink);
  // The stream ended: everything left goes out.
  void finish(const Sink& sink);
  bool has_pending() const { return !pending_.empty() || cr_pending_; }

 private:
  void append(std::string_view part, const Sink& sink);

  std::size_t max_line_;
  std::string pending_;
  bool cr_pending_ = false;  // the last byte fed was "\r"
};

}  // namespace dlaunch
