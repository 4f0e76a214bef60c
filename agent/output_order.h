// Keeps a rank's long lines whole in its log. LineSplitter cuts a line longer
// than a frame into pieces (LineEnd::continued), and sends what it has of a
// line when the rank pauses in its middle (LineEnd::partial); a rank that writes to both
// stdout and stderr could otherwise have a line of the other stream, or a
// "\r" progress segment, land between two pieces of one line. So while one
// stream is in the middle of a line, what the other stream says waits here
// (read from its pipe all the same, so that no rank blocks on a full pipe),
// and follows once that line has ended.
//
// Bounded: a line may run to kWholeLine bytes and the waiting stream may
// hold up to kWholeLine bytes. Past either, the waiting pieces go out and the
// rest of the long line goes on with the other stream beside it; the README
// states the limit.
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "protocol/messages.h"

namespace dlaunch {

class OutputOrder {
 public:
  static constexpr std::size_t kWholeLine = 8 * 1024 * 1024;
  using Sink = std::function<void(proto::Stream stream, std::string_view text, proto::LineEnd end)>;

  explicit OutputOrder(std::size_t whole_line = kWholeLine) : whole_line_(whole_line) {}

  // One piece from LineSplitter, passed on now or after the other stream's line.
  void deliver(proto::Stream stream, std::string_view text, proto::LineEnd end, const Sink& sink);
  // The stream's pipe closed: a line it left unfinished ends here.
  void stream_closed(proto::Stream stream, const Sink& sink);
  // Everything held goes out (the rank is being reported as ended).
  void flush(const Sink& sink);
  // Bytes held back for the moment.
  std::size_t held_bytes() const { return held_bytes_; }

 private:
  struct Piece {
    proto::Stream stream;
    std::string text;
    proto::LineEnd end;
  };
  void pass(proto::Stream stream, std::string_view text, proto::LineEnd end, const Sink& sink);
  void release(const Sink& sink);

  std::size_t whole_line_;
  std::optional<proto::Stream> mid_line_;  // the stream whose line is unfinished
  std::size_t mid_line_bytes_ = 0;
  bool overlong_ = false;  // the unfinished line outgrew the limit: nothing waits for it
  std::deque<Piece> held_;
  std::size_t held_bytes_ = 0;
};

}  // namespace dlaunch
