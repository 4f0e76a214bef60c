#include "agent/line_splitter.h"

#include <algorithm>

namespace dlaunch {

void LineSplitter::feed(std::string_view bytes, const Sink& sink) {
  while (!bytes.empty()) {
    const auto newline = bytes.find('\n');
    std::string_view part = bytes.substr(0, newline);
    while (!part.empty()) {
      // A full piece goes out only once more of the same line follows, so that
      // a line of exactly the limit is one piece, not a piece and an empty line.
      if (pending_.size() == max_line_) {
        sink(pending_);
        pending_.clear();
      }
      const std::size_t take = std::min(part.size(), max_line_ - pending_.size());
      pending_.append(part.substr(0, take));
      part.remove_prefix(take);
    }
    if (newline == std::string_view::npos) return;
    sink(pending_);
    pending_.clear();
    bytes.remove_prefix(newline + 1);
  }
}

void LineSplitter::finish(const Sink& sink) {
  if (!pending_.empty()) sink(pending_);
  pending_.clear();
}

}  // namespace dlaunch
