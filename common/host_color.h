// Per-host colors for the `[host:R]` prefix of rank lines, so that the lines
// of one host stand out among many. Only on a terminal, and never when the
// user set NO_COLOR (any non-empty value, as https://no-color.org asks): a
// file, a pipe or a log collector gets the prefix as plain text.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace dlaunch {

// Whether a stream may be colored: it is a terminal and `no_color` (the value
// of NO_COLOR, nullptr when unset) is unset or empty.
bool color_allowed(bool is_tty, const char* no_color);
// The same for a file descriptor and this process's environment.
bool color_allowed_for_fd(int fd);

// The escape sequence that starts the color of the host at `host_index`
// (hosts-file order); the palette repeats after its few colors. Plain
// foreground colors that read on dark and light backgrounds alike.
std::string_view host_color(std::size_t host_index);
inline constexpr std::string_view kColorReset = "\x1b[0m";

// `text` wrapped in the host's color and a reset.
std::string colored(std::string_view text, std::size_t host_index);

}  // namespace dlaunch
