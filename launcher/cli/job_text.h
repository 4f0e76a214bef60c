// How the job commands show a job: times, durations and its command line.
#pragma once

#include <string>
#include <vector>

namespace dlaunch {

// printf into a string, so that the tables keep their printf layouts (widths
// count bytes) while the text goes out through the console.
std::string formatted(const char* format, ...) __attribute__((format(printf, 1, 2)));

// "2024-05-01 12:00:00" in local time; "-" when unknown.
std::string format_time(long long unix_seconds);

// "42s", "3m07s", "2h05m"; "-" when unknown (negative).
std::string format_duration(long long seconds);

// The command line as the user could type it again: plain words as they are,
// the rest single-quoted.
std::string command_text(const std::vector<std::string>& argv);

}  // namespace dlaunch
