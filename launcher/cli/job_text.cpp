#include "launcher/cli/job_text.h"

#include <cstdarg>
#include <cstdio>
#include <ctime>

#include "ssh/shell_quote.h"

namespace dlaunch {

std::string formatted(const char* format, ...) {
  va_list args;
  va_start(args, format);
  va_list again;
  va_copy(again, args);
  const int size = std::vsnprintf(nullptr, 0, format, args);
  va_end(args);
  std::string text(size > 0 ? static_cast<std::size_t>(size) : 0, '\0');
  if (size > 0) std::vsnprintf(text.data(), text.size() + 1, format, again);
  va_end(again);
  return text;
}

std::string format_time(long long unix_seconds) {
  if (unix_seconds <= 0) return "-";
  const std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  ::localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

std::string format_duration(long long seconds) {
  if (seconds < 0) return "-";
  if (seconds < 60) return formatted("%llds", seconds);
  if (seconds < 3600) return formatted("%lldm%02llds", seconds / 60, seconds % 60);
  return formatted("%lldh%02lldm", seconds / 3600, seconds / 60 % 60);
}

std::string command_text(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& word : argv) {
    // Words without blanks or quoting characters have always been shown bare;
    // keeping them so keeps `dlaunch list` and `get` readable.
    const bool plain = !word.empty() && word.find_first_of(" \t\n'\"\\$`") == std::string::npos;
    if (!out.empty()) out += ' ';
    out += plain ? word : shell_quote(word);
  }
  return out;
}

}  // namespace dlaunch
