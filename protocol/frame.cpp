#include "protocol/frame.h"

#include "protocol/wire.h"

namespace dlaunch {

std::string encode_frame(std::uint8_t type, std::string_view payload) {
  wire::Writer w;
  w.u32(static_cast<std::uint32_t>(payload.size() + 1));
  w.u8(type);
  std::string out = w.take();
  out.append(payload);
  return out;
}

FrameDecoder::Result FrameDecoder::next() {
  // Compact lazily so that many small frames in one read cost one memmove.
  if (start_ > 0 && start_ * 2 > buffer_.size()) {
    buffer_.erase(0, start_);
    start_ = 0;
  }
  std::string_view avail(buffer_.data() + start_, buffer_.size() - start_);
  if (avail.size() < 4) return {Status::need_more, {}, {}};
  wire::Reader header(avail.substr(0, 4));
  const std::uint32_t length = header.u32();
  if (length == 0) return {Status::bad, {}, "empty frame"};
  if (length > max_frame_) {
    return {Status::bad,
            {},
            "frame of " + std::to_string(length) + " bytes exceeds limit of " +
                std::to_string(max_frame_)};
  }
  if (avail.size() < 4 + static_cast<std::size_t>(length)) return {Status::need_more, {}, {}};
  Frame frame;
  frame.type = static_cast<std::uint8_t>(avail[4]);
  frame.payload = avail.substr(5, length - 1);
  start_ += 4 + length;
  if (start_ == buffer_.size()) {
    buffer_.clear();
    start_ = 0;
  }
  return {Status::ok, std::move(frame), {}};
}

}  // namespace dlaunch
