#include "agent/output_order.h"

#include <utility>

namespace dlaunch {

void OutputOrder::deliver(proto::Stream stream, std::string_view text, proto::LineEnd end,
                          const Sink& sink) {
  if (mid_line_ && *mid_line_ != stream && !overlong_) {
    held_bytes_ += text.size();
    held_.push_back({stream, std::string(text), end});
    if (held_bytes_ > whole_line_) {
      overlong_ = true;
      release(sink);
    }
    return;
  }
  pass(stream, text, end, sink);
}

void OutputOrder::pass(proto::Stream stream, std::string_view text, proto::LineEnd end,
                       const Sink& sink) {
  sink(stream, text, end);
  // A piece sent because the rank paused in the middle of a line (partial)
  // leaves that line as unfinished as a 64 KiB cut does: a rank starved of
  // CPU half-way through a long write has the rest to come.
  if (end == proto::LineEnd::continued || end == proto::LineEnd::partial) {
    if (mid_line_ != stream) mid_line_bytes_ = 0;
    mid_line_ = stream;
    mid_line_bytes_ += text.size();
    if (mid_line_bytes_ > whole_line_ && !overlong_) {
      overlong_ = true;
      release(sink);
    }
    return;
  }
  if (mid_line_ == stream) {
    mid_line_.reset();
    mid_line_bytes_ = 0;
    overlong_ = false;
    release(sink);
  }
}

void OutputOrder::release(const Sink& sink) {
  // Held pieces are all of one stream, in order; one of them may start a long
  // line of its own, which the rest (same stream) simply continue.
  if (held_.empty()) return;  // the usual case: no empty deque to build per line
  std::deque<Piece> pieces = std::exchange(held_, {});
  held_bytes_ = 0;
  for (auto& piece : pieces) pass(piece.stream, piece.text, piece.end, sink);
}

void OutputOrder::stream_closed(proto::Stream stream, const Sink& sink) {
  if (mid_line_ != stream) return;
  mid_line_.reset();
  mid_line_bytes_ = 0;
  overlong_ = false;
  release(sink);
}

void OutputOrder::flush(const Sink& sink) {
  mid_line_.reset();
  mid_line_bytes_ = 0;
  overlong_ = false;
  release(sink);
}

}  // namespace dlaunch
