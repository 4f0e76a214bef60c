// Framing of the rendezvous protocol: [u32 length][u8 type][payload], length
// counting type and payload, big-endian. The decoder owns the receive buffer,
// enforces a hard size limit before buffering a frame's body, and answers
// ok / need-more / bad so that I/O code never parses bytes itself.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"

namespace dlaunch {

// Before a peer has proven the job's secret it may send only small frames.
inline constexpr std::size_t kMaxPreAuthFrame = 4 * 1024;
// After it: room for one 64 KiB log line chunk plus headers, and the assignment.
inline constexpr std::size_t kMaxFrame = 1024 * 1024;

// A frame as the decoder hands it out: the payload points into the decoder's
// buffer (no copy per frame, which the busiest path, log lines, would pay
// for every line), valid until the decoder's next feed() or next().
struct Frame {
  std::uint8_t type = 0;
  std::string_view payload;
};

std::string encode_frame(std::uint8_t type, std::string_view payload);

class FrameDecoder {
 public:
  enum class Status { ok, need_more, bad };
  struct Result {
    Status status;
    Frame frame;         // valid when status == ok
    std::string reason;  // set when status == bad
  };

  explicit FrameDecoder(std::size_t max_frame = kMaxPreAuthFrame) : max_frame_(max_frame) {}

  void set_max_frame(std::size_t n) { max_frame_ = n; }
  void feed(std::string_view bytes) { buffer_.append(bytes); }
  // Takes the next whole frame out of the buffer, if there is one.
  Result next();
  // Hands every whole frame buffered to `on_frame` (bool(Frame&&)), in order,
  // until it returns false. Fails saying why the stream is bad, if it is; the
  // frames before the bad one were handed out.
  template <class OnFrame>
  dlaunch::Result<void> each(OnFrame&& on_frame) {
    for (;;) {
      auto result = next();
      if (result.status == Status::need_more) return {};
      if (result.status == Status::bad) return fail(std::move(result.reason));
      if (!on_frame(std::move(result.frame))) return {};
    }
  }
  std::size_t buffered() const { return buffer_.size() - start_; }

 private:
  std::string buffer_;
  std::size_t start_ = 0;
  std::size_t max_frame_;
};

}  // namespace dlaunch
