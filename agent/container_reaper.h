// Containers outlive every process of the agent: conmon (podman) or the
// daemon (docker) holds them, so killing the agent's whole process group (a
// coordinator ending a lost agent, srun, kill -9 of the agent) kills only the
// engine's clients. The reaper is a process outside that group and session,
// started before the agent does anything else: it waits until every process
// of the agent has gone (a pipe whose writing end only they hold reaches
// end-of-file), then removes the containers labelled with this agent's token.
#pragma once

#include <optional>
#include <string>

#include "agent/container_host.h"

namespace dlaunch {

// Forks the reaper (detached: a new session, stdio on /dev/null, not a child
// of this process), and returns the agent's token that names it
// (agent_token(): its pid and start time, then `host.agent_token`, random).
// nullopt when it cannot.
std::optional<std::string> start_container_reaper(ContainerHost host);

}  // namespace dlaunch
