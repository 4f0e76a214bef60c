// The command line that runs one rank inside a container (--image), for each
// engine a bare-metal GPU site runs: podman, docker, apptainer (singularity)
// and NVIDIA's enroot. Pure: the agent resolves the engine and the host's
// facts, this file turns them into argv and the engine's environment.
//
// What every engine gets, its own way:
// - the host's network and IPC (NCCL and Gloo see the host's interfaces;
//   ranks of a node share /dev/shm), unless --shm-size asks for a private one;
// - every GPU of the host when it has any: each rank still picks its own by
//   LOCAL_RANK (or the CUDA_VISIBLE_DEVICES it inherits), as outside;
// - the working directory bind-mounted at the same path, and --mount's;
// - the rank's variables by name only: the values travel in the engine's own
//   environment, never on a command line (a forwarded token stays out of ps);
// - the SSH user's identity, so nothing in the workdir ends up owned by root;
// - podman and docker: a name and labels (the job, and this agent's token) by
//   which leftovers are swept, an init that passes signals on, --rm.
#pragma once

#include <sys/types.h>

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dlaunch {

enum class ContainerEngine { podman, docker, apptainer, enroot };

// "podman", "docker", "apptainer" (also "singularity", its older name), "enroot".
std::optional<ContainerEngine> parse_container_engine(std::string_view name);
std::string_view container_engine_name(ContainerEngine engine);
// The executables `auto` looks for on PATH, in this order, with their engine.
struct EngineCandidate {
  std::string_view executable;
  ContainerEngine engine;
};
const std::vector<EngineCandidate>& engine_candidates();

// The label every podman/docker container of dlaunch carries with the job's
// name, and the one with the token of the agent that started it.
inline constexpr std::string_view kJobLabel = "dlaunch.job";
inline constexpr std::string_view kAgentLabel = "dlaunch.agent";

struct ContainerRank {
  ContainerEngine engine = ContainerEngine::podman;
  std::string executable;  // the engine as found on the host
  std::string image;
  std::string job;
  std::string agent_token;  // unique to the agent: what its sweep removes
  int round = 0;
  int rank = 0;
  std::string workdir;              // absolute; the rank starts here, inside as outside
  std::vector<std::string> mounts;  // SRC:DST[:ro]
  std::string shm_size;             // empty: the host's IPC and /dev/shm
  bool gpus = false;                // the host has NVIDIA GPUs to pass in
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<std::string> argv;  // the rank's program and arguments
};

struct EngineCommand {
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;  // the engine process's environment
};

// The container's name on its host (podman, docker): unique per job, round and rank.
std::string container_name(const ContainerRank& rank);

// The variables a container must be given: every one the rank's environment
// sets or changes against what the agent inherited (the rank's own, and
// NCCL's interface), and every one the job names (`env`, --env, forwarded)
// even where it equals the host's, and CUDA_VISIBLE_DEVICES wherever it is
// set (the container sees every GPU of the host). The host's own PATH, HOME
// and the rest stay outside: the image has its own.
std::vector<std::string> container_variables(const std::map<std::string, std::string>& rank_env,
                                             const std::map<std::string, std::string>& inherited,
                                             const std::map<std::string, std::string>& job_env);

// How to start `rank` with the environment `rank_env`, passing `names` inside.
EngineCommand container_command(const ContainerRank& rank,
                                const std::map<std::string, std::string>& rank_env,
                                const std::vector<std::string>& names);

// podman/docker: the command that lists this agent's containers (ids, one a
// line), and the one that removes the given ones, running or not.
// apptainer/enroot run no daemon: their containers are the rank's processes,
// which the agent's sweep ends; both return empty.
std::vector<std::string> list_containers_command(ContainerEngine engine,
                                                 const std::string& executable,
                                                 std::string_view label, std::string_view value);
std::vector<std::string> remove_containers_command(ContainerEngine engine,
                                                   const std::string& executable,
                                                   const std::vector<std::string>& ids);

// podman/docker: every container of dlaunch on the host, a line each: its ID
// and its labels (as `ps --format` prints them: podman "map[k:v k:v]",
// docker "k=v,k=v").
std::vector<std::string> list_labelled_containers_command(ContainerEngine engine,
                                                          const std::string& executable);
// The value of label `key` in such a labels text; empty when absent.
std::string label_value(std::string_view labels, std::string_view key);

// An agent's token names its reaper, "PID-STARTTICKS-RANDOM": a container
// whose reaper is gone (killed with the agent) has nobody left to remove it.
std::string agent_token(long pid, long long start_ticks, std::string_view random_hex);
struct ReaperIdentity {
  long pid = 0;
  long long start_ticks = 0;
};
std::optional<ReaperIdentity> reaper_of(std::string_view token);

// podman/docker: whether the image is present (exit 0) and how to pull it.
std::vector<std::string> image_present_command(ContainerEngine engine,
                                               const std::string& executable,
                                               const std::string& image);
// `podman load` / `docker load` of an image archive (--image-file); empty for
// the engines that run a file as it is.
std::vector<std::string> load_image_command(ContainerEngine engine, const std::string& executable,
                                            const std::string& archive);
std::vector<std::string> pull_image_command(ContainerEngine engine, const std::string& executable,
                                            const std::string& image);

}  // namespace dlaunch
