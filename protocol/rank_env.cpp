#include "protocol/rank_env.h"

#include <unistd.h>

namespace dlaunch {

EnvMap rank_environment(const proto::Assign& a, int local_rank, const LaunchSpec& spec,
                        const EnvMap& inherited) {
  EnvMap env = inherited;
  for (const auto& [k, v] : spec.env) env[k] = v;
  const int rank = a.rank_offset + local_rank;
  auto set = [&env](const char* key, const auto& value) {
    if constexpr (std::is_convertible_v<decltype(value), std::string>) {
      env[key] = value;
    } else {
      env[key] = std::to_string(value);
    }
  };
  set("RANK", rank);
  set("LOCAL_RANK", local_rank);
  set("WORLD_SIZE", a.world_size);
  set("LOCAL_WORLD_SIZE", a.local_world_size);
  set("GROUP_RANK", a.node_rank);
  set("GROUP_WORLD_SIZE", a.nnodes);
  // deepspeed's launcher (and Horovod) name the same: the node, the nodes,
  // and the ranks on this node.
  set("CROSS_RANK", a.node_rank);
  set("CROSS_SIZE", a.nnodes);
  set("LOCAL_SIZE", a.local_world_size);
  // torchrun's --role reaches the ranks as the launch spec's ROLE_NAME.
  if (!spec.env.contains("ROLE_NAME")) set("ROLE_NAME", std::string("default"));
  set("ROLE_RANK", rank);
  set("ROLE_WORLD_SIZE", a.world_size);
  set("MASTER_ADDR", a.master_addr);
  set("MASTER_PORT", a.master_port);
  set("TORCHELASTIC_RESTART_COUNT", a.round);
  set("TORCHELASTIC_MAX_RESTARTS", a.max_restarts);
  set("TORCHELASTIC_RUN_ID", a.job);
  set("DLAUNCH_JOB", a.job);
  set("DLAUNCH_HOST", spec.host_name);
  if (!spec.checkpoint_dir.empty())
    set("DLAUNCH_CHECKPOINT_DIR", in_workdir(spec, spec.checkpoint_dir));
  // Many ranks each spawning one thread per core starve each other; torchrun
  // sets the same default. A value the user set wins.
  if (a.local_world_size > 1 && !env.contains("OMP_NUM_THREADS")) set("OMP_NUM_THREADS", 1);
  // As torchrun's agent: no store of its own to reuse, and NCCL errors end a
  // rank instead of hanging it. A value the user set wins.
  if (!env.contains("TORCHELASTIC_USE_AGENT_STORE"))
    set("TORCHELASTIC_USE_AGENT_STORE", std::string("False"));
  if (!env.contains("TORCH_NCCL_ASYNC_ERROR_HANDLING")) set("TORCH_NCCL_ASYNC_ERROR_HANDLING", 1);
  // The hosts file's `interface` wins over the one found towards MASTER_ADDR;
  // a value the user exported wins over both. NCCL takes a prefix unless the
  // name starts with '=': "eth0" would also match eth01.
  const std::string& interface = rank_interface(a, spec);
  if (!interface.empty()) {
    if (!env.contains("NCCL_SOCKET_IFNAME")) env["NCCL_SOCKET_IFNAME"] = "=" + interface;
    if (!env.contains("GLOO_SOCKET_IFNAME")) env["GLOO_SOCKET_IFNAME"] = interface;
  }
  return env;
}

const std::string& rank_interface(const proto::Assign& assign, const LaunchSpec& spec) {
  return !spec.interface.empty() ? spec.interface : assign.socket_ifname;
}

std::string socket_ifname_override(const EnvMap& env, const std::string& interface) {
  if (interface.empty()) return {};
  std::string differs;
  for (const char* name : {"NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME"}) {
    const auto it = env.find(name);
    if (it == env.end() || it->second == interface || it->second == "=" + interface) continue;
    differs += (differs.empty() ? "" : ", ") + std::string(name) + "=" + it->second;
  }
  if (differs.empty()) return {};
  return differs +
         " (set for the ranks by you: forwarded or in the hosts file's env) differs from " +
         interface +
         ", the interface dlaunch found for this host (the hosts file's, else the "
         "one towards MASTER_ADDR); the ranks get yours. Unset it to let dlaunch choose";
}

bool is_launcher_variable(std::string_view name) {
  for (auto v : kLauncherVariables) {
    if (v == name) return true;
  }
  return false;
}

EnvMap current_environment() {
  EnvMap env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view entry(*e);
    const auto eq = entry.find('=');
    if (eq == std::string_view::npos || eq == 0) continue;
    env.emplace(std::string(entry.substr(0, eq)), std::string(entry.substr(eq + 1)));
  }
  return env;
}

}  // namespace dlaunch
