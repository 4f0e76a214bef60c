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

#include <string>
#include <string_view>

#include "protocol/launch_spec.h"

namespace dlaunch {

// Reads launch specs from `fd` until one is `node_name`'s, at most as many as
// the first spec's node count. An error when the stream is bad or ends
// first, or none of those specs names this node.
Result<LaunchSpec> read_slurm_launch_spec(int fd, std::string_view node_name);

// The agent's own task and step variables (SLURM_PROCID, SLURM_NTASKS, ...)
// describe one task per node, not the ranks: a library that reads them (e.g.
// Lightning's Slurm detection) would take the wrong rank and world size. The
// job's variables (SLURM_JOB_ID, SLURM_JOB_NODELIST, ...) stay.
inline constexpr std::string_view kSlurmTaskVariables[] = {
    "SLURM_PROCID",         "SLURM_LOCALID",          "SLURM_NODEID",
    "SLURM_NTASKS",         "SLURM_NPROCS",           "SLURM_NTASKS_PER_NODE",
    "SLURM_TASKS_PER_NODE", "SLURM_STEP_NUM_TASKS",   "SLURM_STEP_TASKS_PER_NODE",
    "SLURM_TASK_PID",       "SLURM_CPU_BIND",         "SLURM_CPU_BIND_LIST",
    "SLURM_CPU_BIND_TYPE",  "SLURM_CPU_BIND_VERBOSE", "SLURM_GTIDS"};

// Removes them from this process's environment, which the ranks inherit.
void forget_slurm_task_variables();

}  // namespace dlaunch
