#include "agent/container_command.h"

#include <algorithm>

namespace dlaunch {
namespace {

using Env = std::map<std::string, std::string>;

// A container name allows [a-zA-Z0-9][a-zA-Z0-9_.-]*: anything else in a job's
// name becomes '-'.
std::string name_part(std::string_view text) {
  std::string out;
  for (const char c : text) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '.' || c == '-';
    out.push_back(ok ? c : '-');
  }
  return out;
}

// SRC:DST[:ro] as each engine spells a bind mount.
struct Mount {
  std::string source;
  std::string target;
  bool read_only = false;
};

Mount parse_mount(const std::string& text) {
  Mount m;
  std::string rest = text;
  if (rest.ends_with(":ro")) {
    m.read_only = true;
    rest.resize(rest.size() - 3);
  } else if (rest.ends_with(":rw")) {
    rest.resize(rest.size() - 3);
  }
  const auto colon = rest.find(':');
  m.source = rest.substr(0, colon);
  m.target = colon == std::string::npos ? m.source : rest.substr(colon + 1);
  return m;
}

std::vector<Mount> all_mounts(const ContainerRank& rank) {
  std::vector<Mount> mounts;
  if (!rank.workdir.empty()) mounts.push_back({rank.workdir, rank.workdir, false});
  for (const auto& text : rank.mounts) mounts.push_back(parse_mount(text));
  return mounts;
}

std::string ids(const ContainerRank& rank) {
  return std::to_string(rank.uid) + ":" + std::to_string(rank.gid);
}

// podman and docker share almost every flag; GPUs and the user differ.
EngineCommand oci_run(const ContainerRank& rank, const Env& rank_env,
                      const std::vector<std::string>& names) {
  const bool podman = rank.engine == ContainerEngine::podman;
  std::vector<std::string> a = {rank.executable};
  // The client's own log lines ("level=error msg=\"forwarding signal 15 to
  // container ...\"" when a rank is stopped) would land in the rank's output;
  // its errors still say why it failed (they are not log lines). Some
  // "container not running" lines at a stop still come, from another podman
  // process than this client (issue 51.11).
  if (podman) a.emplace_back("--log-level=fatal");
  a.insert(a.end(), {"run", "--rm", "--init", "--name", container_name(rank), "--label",
                     std::string(kJobLabel) + "=" + rank.job, "--label",
                     std::string(kAgentLabel) + "=" + rank.agent_token});
  a.emplace_back("--network=host");
  // A plain rank has no limit on its threads; a data loader's workers and
  // their threads soon pass podman's default of 2048.
  a.emplace_back("--pids-limit=-1");
  // The agent pulled the image before the ranks start: ranks racing to pull
  // it would each download it.
  a.emplace_back("--pull=never");
  if (rank.shm_size.empty()) {
    a.emplace_back("--ipc=host");
  } else {
    a.push_back("--shm-size=" + rank.shm_size);
  }
  if (podman && rank.uid != 0) {
    // Rootless podman maps the user to root inside unless told to keep it.
    a.emplace_back("--userns=keep-id");
  } else {
    a.push_back("--user=" + ids(rank));
  }
  if (rank.gpus) {
    // podman: the Container Device Interface (nvidia-ctk cdi generate);
    // docker: the NVIDIA Container Toolkit's --gpus.
    a.emplace_back(podman ? "--device=nvidia.com/gpu=all" : "--gpus=all");
  }
  for (const auto& m : all_mounts(rank))
    a.push_back("--volume=" + m.source + ":" + m.target + (m.read_only ? ":ro" : ""));
  if (!rank.workdir.empty()) a.push_back("--workdir=" + rank.workdir);
  for (const auto& name : names) a.push_back("--env=" + name);
  a.push_back(rank.image);
  a.insert(a.end(), rank.argv.begin(), rank.argv.end());
  return {std::move(a), rank_env};
}

// apptainer: no daemon, the host's network and IPC by default, the calling
// user inside. --cleanenv keeps the host's environment out; APPTAINERENV_X
// (SINGULARITYENV_X for singularity) puts X in.
EngineCommand apptainer_exec(const ContainerRank& rank, const Env& rank_env,
                             const std::vector<std::string>& names) {
  std::vector<std::string> a = {rank.executable, "exec", "--cleanenv"};
  if (rank.gpus) a.emplace_back("--nv");
  for (const auto& m : all_mounts(rank))
    a.push_back("--bind=" + m.source + ":" + m.target + (m.read_only ? ":ro" : ""));
  if (!rank.workdir.empty()) a.push_back("--pwd=" + rank.workdir);
  a.push_back(rank.image);
  a.insert(a.end(), rank.argv.begin(), rank.argv.end());
  const bool singularity = rank.executable.ends_with("singularity");
  Env env = rank_env;
  for (const auto& name : names) {
    const auto it = rank_env.find(name);
    if (it != rank_env.end())
      env[(singularity ? "SINGULARITYENV_" : "APPTAINERENV_") + name] = it->second;
  }
  return {std::move(a), std::move(env)};
}

// enroot: no daemon; `start` takes a .sqsh image or a created container's
// name. --env NAME takes the value from enroot's own environment; mounts are
// fstab entries. It has no working-directory flag: a shell in the image
// changes there first ("$1"), then execs the rank's argv unchanged.
EngineCommand enroot_start(const ContainerRank& rank, const Env& rank_env,
                           const std::vector<std::string>& names) {
  std::vector<std::string> a = {rank.executable, "start", "--rw"};
  for (const auto& m : all_mounts(rank))
    a.push_back("--mount=" + m.source + " " + m.target + " none x-create=dir,bind" +
                (m.read_only ? ",ro" : ""));
  for (const auto& name : names) a.push_back("--env=" + name);
  Env env = rank_env;
  if (rank.gpus) {
    // enroot's NVIDIA hook passes the GPUs these variables name.
    for (const char* name : {"NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES"}) {
      if (std::find(names.begin(), names.end(), name) == names.end())
        a.push_back(std::string("--env=") + name);
    }
    env.try_emplace("NVIDIA_VISIBLE_DEVICES", "all");
    env.try_emplace("NVIDIA_DRIVER_CAPABILITIES", "compute,utility");
  }
  a.push_back(rank.image);
  if (!rank.workdir.empty()) {
    a.insert(a.end(),
             {"/bin/sh", "-c", "cd \"$1\" && shift && exec \"$@\"", "dlaunch-rank", rank.workdir});
  }
  a.insert(a.end(), rank.argv.begin(), rank.argv.end());
  return {std::move(a), std::move(env)};
}

}  // namespace

std::optional<ContainerEngine> parse_container_engine(std::string_view name) {
  if (name == "podman") return ContainerEngine::podman;
  if (name == "docker") return ContainerEngine::docker;
  if (name == "apptainer" || name == "singularity") return ContainerEngine::apptainer;
  if (name == "enroot") return ContainerEngine::enroot;
  return std::nullopt;
}

std::string_view container_engine_name(ContainerEngine engine) {
  switch (engine) {
    case ContainerEngine::podman:
      return "podman";
    case ContainerEngine::docker:
      return "docker";
    case ContainerEngine::apptainer:
      return "apptainer";
    case ContainerEngine::enroot:
      return "enroot";
  }
  return "?";
}

const std::vector<EngineCandidate>& engine_candidates() {
  static const std::vector<EngineCandidate> candidates = {
      {"podman", ContainerEngine::podman},
      {"docker", ContainerEngine::docker},
      {"apptainer", ContainerEngine::apptainer},
      {"singularity", ContainerEngine::apptainer},
      {"enroot", ContainerEngine::enroot}};
  return candidates;
}

std::string container_name(const ContainerRank& rank) {
  return "dlaunch-" + name_part(rank.job) + "-r" + std::to_string(rank.round) + "-" +
         std::to_string(rank.rank);
}

std::vector<std::string> container_variables(const Env& rank_env, const Env& inherited,
                                             const Env& job_env) {
  std::vector<std::string> names;
  for (const auto& [name, value] : rank_env) {
    const auto host = inherited.find(name);
    // The container gets every GPU of the host: the GPUs a login there is
    // limited to must limit the rank inside as well.
    const bool gpu_choice = name == "CUDA_VISIBLE_DEVICES";
    if (host == inherited.end() || host->second != value || job_env.contains(name) || gpu_choice)
      names.push_back(name);
  }
  return names;
}

EngineCommand container_command(const ContainerRank& rank, const Env& rank_env,
                                const std::vector<std::string>& names) {
  switch (rank.engine) {
    case ContainerEngine::podman:
    case ContainerEngine::docker:
      return oci_run(rank, rank_env, names);
    case ContainerEngine::apptainer:
      return apptainer_exec(rank, rank_env, names);
    case ContainerEngine::enroot:
      return enroot_start(rank, rank_env, names);
  }
  return {};
}

std::vector<std::string> list_containers_command(ContainerEngine engine,
                                                 const std::string& executable,
                                                 std::string_view label, std::string_view value) {
  if (engine != ContainerEngine::podman && engine != ContainerEngine::docker) return {};
  return {executable,   "ps",
          "--all",      "--quiet",
          "--no-trunc", "--filter=label=" + std::string(label) + "=" + std::string(value)};
}

std::vector<std::string> remove_containers_command(ContainerEngine engine,
                                                   const std::string& executable,
                                                   const std::vector<std::string>& ids) {
  if (ids.empty() || (engine != ContainerEngine::podman && engine != ContainerEngine::docker))
    return {};
  std::vector<std::string> a = {executable, "rm", "--force"};
  // Called once the ranks' grace is over: podman's rm would otherwise send
  // SIGTERM and wait its own 10 s more (docker's rm --force kills at once).
  if (engine == ContainerEngine::podman) a.emplace_back("--time=0");
  a.insert(a.end(), ids.begin(), ids.end());
  return a;
}

std::vector<std::string> list_labelled_containers_command(ContainerEngine engine,
                                                          const std::string& executable) {
  if (engine != ContainerEngine::podman && engine != ContainerEngine::docker) return {};
  return {executable,
          "ps",
          "--all",
          "--no-trunc",
          "--filter=label=" + std::string(kAgentLabel),
          "--format={{.ID}} {{.Labels}}"};
}

std::string label_value(std::string_view labels, std::string_view key) {
  std::size_t from = 0;
  while (true) {
    const auto at = labels.find(key, from);
    if (at == std::string_view::npos) return "";
    const bool starts =
        at == 0 || labels[at - 1] == '[' || labels[at - 1] == ' ' || labels[at - 1] == ',';
    const auto after = at + key.size();
    if (starts && after < labels.size() && (labels[after] == ':' || labels[after] == '=')) {
      const auto end = labels.find_first_of(" ,]", after + 1);
      return std::string(labels.substr(
          after + 1, end == std::string_view::npos ? std::string_view::npos : end - after - 1));
    }
    from = after;
  }
}

std::string agent_token(long pid, long long start_ticks, std::string_view random_hex) {
  return std::to_string(pid) + "-" + std::to_string(start_ticks) + "-" + std::string(random_hex);
}

std::optional<ReaperIdentity> reaper_of(std::string_view token) {
  ReaperIdentity id;
  const auto first = token.find('-');
  const auto second = token.find('-', first == std::string_view::npos ? first : first + 1);
  if (first == std::string_view::npos || second == std::string_view::npos) return std::nullopt;
  const auto number = [](std::string_view digits, auto& out) {
    if (digits.empty() || digits.size() > 18) return false;
    out = 0;
    for (const char c : digits) {
      if (c < '0' || c > '9') return false;
      out = out * 10 + (c - '0');
    }
    return true;
  };
  if (!number(token.substr(0, first), id.pid) ||
      !number(token.substr(first + 1, second - first - 1), id.start_ticks) || id.pid <= 0)
    return std::nullopt;
  return id;
}

std::vector<std::string> image_present_command(ContainerEngine engine,
                                               const std::string& executable,
                                               const std::string& image) {
  if (engine == ContainerEngine::podman) return {executable, "image", "exists", image};
  if (engine == ContainerEngine::docker) return {executable, "image", "inspect", image};
  return {};
}

std::vector<std::string> load_image_command(ContainerEngine engine, const std::string& executable,
                                            const std::string& archive) {
  if (engine != ContainerEngine::podman && engine != ContainerEngine::docker) return {};
  return {executable, "load", "--input", archive};
}

std::vector<std::string> pull_image_command(ContainerEngine engine, const std::string& executable,
                                            const std::string& image) {
  if (engine != ContainerEngine::podman && engine != ContainerEngine::docker) return {};
  return {executable, "pull", "--quiet", image};
}

}  // namespace dlaunch
