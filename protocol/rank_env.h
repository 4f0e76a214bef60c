// The environment of one rank: torchrun-compatible variables so that existing
// trainers run unchanged, plus dlaunch's own. Pure: computed from the
// assignment, the launch spec and the agent's inherited environment.
#pragma once

#include <map>
#include <string>

#include "protocol/launch_spec.h"
#include "protocol/messages.h"

namespace dlaunch {

using EnvMap = std::map<std::string, std::string>;

// Returns the complete environment for local rank `local_rank`: `inherited`
// overlaid with the host's extra env and then the launcher's variables.
EnvMap rank_environment(const proto::Assign& assign, int local_rank, const LaunchSpec& spec,
                        const EnvMap& inherited);

// The current process environment as a map.
EnvMap current_environment();

}  // namespace dlaunch
