#include "common/utf8.h"

#include <cstdio>

namespace dlaunch {
namespace {

bool continuation(unsigned char c) {
  return (c & 0xC0) == 0x80;
}

// A code point of the C0 or C1 control sets, or DEL.
bool control(std::string_view text, std::size_t at, std::size_t length) {
  const auto c = static_cast<unsigned char>(text[at]);
  if (length == 1) return c < 0x20 || c == 0x7f;
  return length == 2 && c == 0xC2 && static_cast<unsigned char>(text[at + 1]) < 0xA0;
}

}  // namespace

std::size_t utf8_sequence_length(std::string_view text, std::size_t at) {
  const auto c = static_cast<unsigned char>(text[at]);
  if (c < 0x80) return 1;
  std::size_t length = 0;
  unsigned min_second = 0x80, max_second = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    length = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    length = 3;
    if (c == 0xE0) min_second = 0xA0;  // overlong
    if (c == 0xED) max_second = 0x9F;  // surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    length = 4;
    if (c == 0xF0) min_second = 0x90;  // overlong
    if (c == 0xF4) max_second = 0x8F;  // past U+10FFFF
  } else {
    return 0;
  }
  if (text.size() - at < length) return 0;
  const auto second = static_cast<unsigned char>(text[at + 1]);
  if (second < min_second || second > max_second) return 0;
  for (std::size_t i = 2; i < length; ++i)
    if (!continuation(static_cast<unsigned char>(text[at + i]))) return 0;
  return length;
}

bool printable_utf8(std::string_view text) {
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t length = utf8_sequence_length(text, at);
    if (length == 0 || control(text, at, length)) return false;
    at += length;
  }
  return true;
}

std::string escape_unprintable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t length = utf8_sequence_length(text, at);
    if (length != 0 && !control(text, at, length)) {
      out.append(text.substr(at, length));
      at += length;
      continue;
    }
    // One byte at a time: the next may begin a valid sequence.
    char escaped[8];
    std::snprintf(escaped, sizeof escaped, "\\x%02x", static_cast<unsigned char>(text[at]));
    out += escaped;
    ++at;
  }
  return out;
}

}  // namespace dlaunch
