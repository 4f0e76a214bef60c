// `dlaunch-agent --slurm`: the agent of a Slurm job step. The coordinator's
// Slurm transport writes every node's launch spec, one after the other in node
// order, to srun's stdin, and srun (--input=all) hands the whole stream to
// every agent. Each agent keeps the spec whose host_name is its own Slurm node
// name (SLURMD_NODENAME, which slurmstepd sets for every task). Matching names
// rather than trusting SLURM_NODEID to follow the coordinator's node order
// keeps each node's rank and label right however Slurm orders the step.
//
// The specs after the agent's own stay unread on stdin; the agent's stdin
// watch skips them on its way to the end-of-file that tells it to stop.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "protocol/launch_spec.h"

namespace dlaunch {

// Reads launch specs from `fd` until one is `node_name`'s, at most as many as
// the first spec's node count. An error (in `error`) when the stream is bad or
// ends first, or none of those specs names this node.
std::optional<LaunchSpec> read_slurm_launch_spec(int fd, std::string_view node_name,
                                                 std::string* error);

}  // namespace dlaunch
