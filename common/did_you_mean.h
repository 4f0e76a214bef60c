// Spelling suggestions for unknown names in config files and on the command
// line: "unknown key 'slot'; did you mean 'slots'?".
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace dlaunch {

// Edit distance counting insertions, deletions, substitutions and swaps of two
// adjacent characters (optimal string alignment), case-sensitive.
std::size_t edit_distance(std::string_view a, std::string_view b);

// The closest candidate within `max_distance` edits, or nothing. A match must
// also change less than half of the longer word, so that short unrelated words
// ("port" and "host") are not offered as each other's typo. Ties go to the
// candidate listed first.
std::optional<std::string> did_you_mean(std::string_view word,
                                        std::span<const std::string_view> candidates,
                                        std::size_t max_distance = 2);

}  // namespace dlaunch
