#include "agent/line_splitter.h"

#include <algorithm>
#include <cstring>

namespace dlaunch {

using proto::LineEnd;

void LineSplitter::append(std::string_view part, const Sink& sink) {
  while (!part.empty()) {
    // A full piece goes out only once more of the same line follows, so that
    // a line of exactly the limit is one piece, not a piece and an empty line.
    if (pending_.size() >= max_line_) {
      sink(std::string_view(pending_).substr(0, max_line_), LineEnd::continued);
      pending_.erase(0, max_line_);
    }
    const std::size_t take = std::min(part.size(), max_line_ - pending_.size());
    pending_.append(part.substr(0, take));
    part.remove_prefix(take);
  }
}

namespace {

// Where the text before the next "\r" or "\n" ends (npos: neither comes).
// Two memchr's, not string_view::find_first_of, which tries the set against
// every byte in turn: a quarter of an agent's CPU in an output flood.
std::size_t line_end(std::string_view bytes) {
  const void* newline = std::memchr(bytes.data(), '\n', bytes.size());
  const std::size_t before =
      newline ? static_cast<std::size_t>(static_cast<const char*>(newline) - bytes.data())
              : bytes.size();
  const void* cr = std::memchr(bytes.data(), '\r', before);
  if (cr) return static_cast<std::size_t>(static_cast<const char*>(cr) - bytes.data());
  return newline ? before : std::string_view::npos;
}

}  // namespace

void LineSplitter::feed(std::string_view bytes, const Sink& sink) {
  while (!bytes.empty()) {
    if (cr_pending_) {
      cr_pending_ = false;
      if (bytes.front() == '\n') {
        // "\r\n": a line that keeps its "\r", byte for byte.
        pending_.push_back('\r');
        sink(pending_, LineEnd::newline);
        pending_.clear();
        bytes.remove_prefix(1);
        continue;
      }
      sink(pending_, LineEnd::carriage_return);
      pending_.clear();
    }
    const auto end = line_end(bytes);
    if (end == std::string_view::npos) {
      append(bytes, sink);
      return;
    }
    if (bytes[end] == '\n' && pending_.empty() && end <= max_line_) {
      // A whole line in this read: straight from the read buffer, no copy.
      sink(bytes.substr(0, end), LineEnd::newline);
    } else {
      append(bytes.substr(0, end), sink);
      if (bytes[end] == '\n') {
        sink(pending_, LineEnd::newline);
        pending_.clear();
      } else {
        cr_pending_ = true;  // decided by the next byte
      }
    }
    bytes.remove_prefix(end + 1);
  }
}

void LineSplitter::flush_partial(const Sink& sink) {
  if (cr_pending_) {
    // Nothing followed the "\r" for a while: a progress display, not "\r\n".
    cr_pending_ = false;
    sink(pending_, LineEnd::carriage_return);
    pending_.clear();
    return;
  }
  if (pending_.empty()) return;
  sink(pending_, LineEnd::partial);
  pending_.clear();
}

void LineSplitter::finish(const Sink& sink) {
  flush_partial(sink);
}

}  // namespace dlaunch
