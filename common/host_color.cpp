#include "common/host_color.h"

#include <unistd.h>

#include <array>
#include <cstdlib>

namespace dlaunch {
namespace {

// Cyan, yellow, magenta, green, blue, then their bright forms. Red is left
// out: it reads as an error.
constexpr std::array<std::string_view, 10> kPalette = {
    "\x1b[36m", "\x1b[33m", "\x1b[35m", "\x1b[32m", "\x1b[34m",
    "\x1b[96m", "\x1b[93m", "\x1b[95m", "\x1b[92m", "\x1b[94m",
};

}  // namespace

bool color_allowed(bool is_tty, const char* no_color) {
  return is_tty && (no_color == nullptr || *no_color == '\0');
}

bool color_allowed_for_fd(int fd) {
  return color_allowed(::isatty(fd) == 1, std::getenv("NO_COLOR"));
}

std::string_view host_color(std::size_t host_index) {
  return kPalette[host_index % kPalette.size()];
}

std::string colored(std::string_view text, std::size_t host_index) {
  std::string out(host_color(host_index));
  out += text;
  out += kColorReset;
  return out;
}

}  // namespace dlaunch
