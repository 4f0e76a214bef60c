// The environment of one rank: torchrun-compatible variables so that existing
// trainers run unchanged, plus dlaunch's own. Pure: computed from the
// assignment, the launch spec and the agent's inherited environment.
#pragma once

#include <array>
#include <map>
#include <string>
#include <string_view>

#include "protocol/launch_spec.h"
#include "protocol/messages.h"

namespace dlaunch {

using EnvMap = std::map<std::string, std::string>;

// What torchrun's agent sets for every rank unless the user did (as dlaunch
// does ROLE_NAME and OMP_NUM_THREADS).
inline constexpr std::array<std::string_view, 2> kLauncherDefaults = {
    "TORCHELASTIC_USE_AGENT_STORE", "TORCH_NCCL_ASYNC_ERROR_HANDLING"};

// The variables dlaunch sets for every rank, whatever the host's environment
// or the hosts file say: a hosts-file `env` that sets one is refused.
// ROLE_NAME is not among them: "default" unless --role (torchrun's) or --env
// names the role.
inline constexpr std::array<std::string_view, 18> kLauncherVariables = {
    "RANK",
    "LOCAL_RANK",
    "WORLD_SIZE",
    "LOCAL_WORLD_SIZE",
    "GROUP_RANK",
    "GROUP_WORLD_SIZE",
    "CROSS_RANK",
    "CROSS_SIZE",
    "LOCAL_SIZE",
    "ROLE_RANK",
    "ROLE_WORLD_SIZE",
    "MASTER_ADDR",
    "MASTER_PORT",
    "TORCHELASTIC_RESTART_COUNT",
    "TORCHELASTIC_MAX_RESTARTS",
    "TORCHELASTIC_RUN_ID",
    "DLAUNCH_JOB",
    "DLAUNCH_HOST"};

bool is_launcher_variable(std::string_view name);

// Returns the complete environment for local rank `local_rank`: `inherited`
// overlaid with the host's extra env and then the launcher's variables.
EnvMap rank_environment(const proto::Assign& assign, int local_rank, const LaunchSpec& spec,
                        const EnvMap& inherited);

// The current process environment as a map.
EnvMap current_environment();

// The interface a node's ranks are given for NCCL and Gloo: the hosts file's,
// else the one towards MASTER_ADDR from the assignment; empty: NCCL's choice.
const std::string& rank_interface(const proto::Assign& assign, const LaunchSpec& spec);

// The ranks' environment `env` names another interface for NCCL or Gloo than
// `interface` (the hosts file's, else the one towards MASTER_ADDR): a value the
// user set wins, which is right when meant and a hang across regions when it
// is not (a management NIC exported everywhere). One line saying which
// interface the ranks get, or empty when they agree.
std::string socket_ifname_override(const EnvMap& env, const std::string& interface);

}  // namespace dlaunch
