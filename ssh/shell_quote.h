// Quoting for the one command line dlaunch sends to a remote shell (the agent's
// path). POSIX single quotes: every byte but ' is literal inside them, and ' is
// written as '\''. Program arguments never pass through a shell at all: they
// travel inside the launch spec.
#pragma once

#include <string>
#include <string_view>

namespace dlaunch {

std::string shell_quote(std::string_view s);

}  // namespace dlaunch
