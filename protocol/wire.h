// Bounds-checked big-endian field encoding shared by every message of the
// rendezvous protocol and by the agent's launch spec. A reader never reads past
// its buffer: any short or oversized field marks it failed, and callers treat a
// failed reader as a malformed message from the peer (drop it, keep serving).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dlaunch::wire {

// Hard limits on single fields; frames have their own limit (frame.h).
inline constexpr std::size_t kMaxString = 256 * 1024;
inline constexpr std::size_t kMaxListItems = 4096;

class Writer {
 public:
  Writer() = default;
  // Appends to `into` (take() gives it back), so that many messages can be
  // written one after another into one buffer.
  explicit Writer(std::string into) : out_(std::move(into)) {}
  void u8(std::uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void u16(std::uint16_t v);
  void u32(std::uint32_t v);
  void u64(std::uint64_t v);
  void i32(std::int32_t v) { u32(static_cast<std::uint32_t>(v)); }
  void i64(std::int64_t v) { u64(static_cast<std::uint64_t>(v)); }
  void str(std::string_view s);
  void strings(const std::vector<std::string>& items);
  void string_map(const std::map<std::string, std::string>& items);

  const std::string& bytes() const { return out_; }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}

  std::uint8_t u8();
  std::uint16_t u16();
  std::uint32_t u32();
  std::uint64_t u64();
  std::int32_t i32() { return static_cast<std::int32_t>(u32()); }
  std::int64_t i64() { return static_cast<std::int64_t>(u64()); }
  std::string str(std::size_t max = kMaxString);
  std::vector<std::string> strings(std::size_t max_items = kMaxListItems);
  std::map<std::string, std::string> string_map(std::size_t max_items = kMaxListItems);

  // True when every read so far fit and the whole input was consumed.
  bool done() const { return ok_ && pos_ == in_.size(); }
  bool ok() const { return ok_; }

 private:
  bool take(std::size_t n, const char** at);

  std::string_view in_;
  std::size_t pos_ = 0;
  bool ok_ = true;
};

}  // namespace dlaunch::wire
