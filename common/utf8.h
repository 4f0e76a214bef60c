// Text that came from another machine (a Join's host name, a rank's output)
// may be any bytes. Before it reaches a job record (JSON, TOML: UTF-8 only) or
// a terminal (where an escape sequence would act), it is checked here.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace dlaunch {

// How many bytes the UTF-8 sequence at text[at] takes; 0 when it is not one
// (a stray continuation byte, an overlong form, a surrogate, past U+10FFFF,
// cut short).
std::size_t utf8_sequence_length(std::string_view text, std::size_t at);

// Valid UTF-8 with no control character (C0, DEL, C1): a name that prints as
// itself.
bool printable_utf8(std::string_view text);

// `text` with each byte that is not part of valid UTF-8 and each control
// character shown as \xNN: what a terminal or record shows of a name from the
// wire.
std::string escape_unprintable(std::string_view text);

}  // namespace dlaunch
