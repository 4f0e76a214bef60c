// dlaunch's diagnostics (common/log.h) written by spdlog on stderr, at the
// level that -v asks for. Nothing else in dlaunch talks to spdlog: the text
// that dlaunch prints itself goes through the console.
#pragma once

namespace dlaunch {

// 0: warnings and errors, 1: also info, 2 or more: also debug.
void setup_logging(int verbosity);

}  // namespace dlaunch
