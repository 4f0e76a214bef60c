// Small text helpers shared by the launcher's parts.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace dlaunch {

// The non-empty lines of `text`, without their newlines.
std::vector<std::string> split_lines(std::string_view text);

// `text` without the spaces, tabs and line ends around it.
std::string trim(std::string_view text);

// The last `n` non-empty lines of `text`, joined with newlines: the tail of an
// agent's diagnostics in an error message.
std::string last_lines(std::string_view text, std::size_t n);

// 20000 -> "20,000": counts of hosts, pairs and files in messages.
std::string grouped(std::size_t n);

// `text` with A-Z as a-z (bytes, whatever the locale).
std::string ascii_lower(std::string_view text);

// A variable name a shell would accept: [A-Za-z_][A-Za-z0-9_]*.
bool valid_env_name(std::string_view name);

}  // namespace dlaunch
