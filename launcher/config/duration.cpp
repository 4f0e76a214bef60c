#include "launcher/config/duration.h"

#include <cctype>
#include <string>

namespace dlaunch {

Result<std::chrono::milliseconds> parse_duration(std::string_view text) {
  const std::string given(text);
  auto bad = [&given] {
    return fail("expected a duration like 90s, 10m, 2h or 1h30m, got '" + given + "'");
  };
  if (text.empty()) return bad();
  long long total_ms = 0;
  bool first = true;
  while (!text.empty()) {
    std::size_t digits = 0;
    while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
    if (digits == 0 || digits > 9) return bad();
    const long long n = std::stoll(std::string(text.substr(0, digits)));
    text.remove_prefix(digits);
    std::size_t unit_length = 0;
    while (unit_length < text.size() && std::isalpha(static_cast<unsigned char>(text[unit_length])))
      ++unit_length;
    const std::string_view unit = text.substr(0, unit_length);
    text.remove_prefix(unit_length);
    long long scale = 0;
    if (unit.empty() || unit == "s") {
      scale = 1000;
    } else if (unit == "ms") {
      scale = 1;
    } else if (unit == "m" || unit == "min") {
      scale = 60'000;
    } else if (unit == "h") {
      scale = 3'600'000;
    } else {
      return bad();
    }
    // A bare number is the whole duration: not "10 5m", not "5m10".
    if (unit.empty() && (!first || !text.empty())) return bad();
    first = false;
    total_ms += n * scale;
    if (total_ms > 7LL * 24 * 3'600'000) return fail("'" + given + "' is more than a week");
  }
  return std::chrono::milliseconds(total_ms);
}

}  // namespace dlaunch
