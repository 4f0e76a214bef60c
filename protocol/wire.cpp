#include "protocol/wire.h"

namespace dlaunch::wire {

void Writer::u16(std::uint16_t v) {
  u8(static_cast<std::uint8_t>(v >> 8));
  u8(static_cast<std::uint8_t>(v));
}

void Writer::u32(std::uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) u8(static_cast<std::uint8_t>(v >> shift));
}

void Writer::u64(std::uint64_t v) {
  for (int shift = 56; shift >= 0; shift -= 8) u8(static_cast<std::uint8_t>(v >> shift));
}

void Writer::str(std::string_view s) {
  u32(static_cast<std::uint32_t>(s.size()));
  out_.append(s);
}

void Writer::strings(const std::vector<std::string>& items) {
  u32(static_cast<std::uint32_t>(items.size()));
  for (const auto& s : items) str(s);
}

void Writer::string_map(const std::map<std::string, std::string>& items) {
  u32(static_cast<std::uint32_t>(items.size()));
  for (const auto& [k, v] : items) {
    str(k);
    str(v);
  }
}

bool Reader::take(std::size_t n, const char** at) {
  if (!ok_ || in_.size() - pos_ < n) {
    ok_ = false;
    return false;
  }
  *at = in_.data() + pos_;
  pos_ += n;
  return true;
}

std::uint8_t Reader::u8() {
  const char* p = nullptr;
  return take(1, &p) ? static_cast<std::uint8_t>(*p) : 0;
}

std::uint16_t Reader::u16() {
  const char* p = nullptr;
  if (!take(2, &p)) return 0;
  return static_cast<std::uint16_t>((static_cast<unsigned char>(p[0]) << 8) |
                                    static_cast<unsigned char>(p[1]));
}

std::uint32_t Reader::u32() {
  const char* p = nullptr;
  if (!take(4, &p)) return 0;
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

std::uint64_t Reader::u64() {
  const char* p = nullptr;
  if (!take(8, &p)) return 0;
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

std::string Reader::str(std::size_t max) {
  const std::uint32_t n = u32();
  if (n > max) ok_ = false;
  const char* p = nullptr;
  if (!ok_ || !take(n, &p)) return {};
  return std::string(p, n);
}

std::vector<std::string> Reader::strings(std::size_t max_items) {
  const std::uint32_t n = u32();
  std::vector<std::string> items;
  if (n > max_items) ok_ = false;
  for (std::uint32_t i = 0; ok_ && i < n; ++i) items.push_back(str());
  return items;
}

std::map<std::string, std::string> Reader::string_map(std::size_t max_items) {
  const std::uint32_t n = u32();
  std::map<std::string, std::string> items;
  if (n > max_items) ok_ = false;
  for (std::uint32_t i = 0; ok_ && i < n; ++i) {
    std::string k = str();
    std::string v = str();
    items[std::move(k)] = std::move(v);
  }
  return items;
}

}  // namespace dlaunch::wire
