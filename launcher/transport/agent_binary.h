// Where this machine's dlaunch-agent is, the binary every transport starts
// (uploaded to a remote host first when it lacks it).
#pragma once

#include <string>

#include "common/result.h"

namespace dlaunch {

// $DLAUNCH_AGENT (made absolute), else dlaunch-agent next to this program
// (build/bin, /usr/bin) or in ../lib/dlaunch. The error says what to set.
Result<std::string> find_agent_binary();

}  // namespace dlaunch
