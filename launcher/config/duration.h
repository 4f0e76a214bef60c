// Durations as people write them on a command line: "90s", "10m", "2h",
// "1h30m", "500ms"; a bare number is seconds (as --grace's).
#pragma once

#include <chrono>
#include <string_view>

#include "common/result.h"

namespace dlaunch {

Result<std::chrono::milliseconds> parse_duration(std::string_view text);

}  // namespace dlaunch
