// The container engine of this host for a job with --image: found once when
// the agent starts (before it joins, so a host that cannot run the image says
// so at once, naming the engine and its message), and asked afterwards to
// sweep the containers this agent started. Blocking helpers: they run before
// the event loop starts and after it ends.
#pragma once

#include <string>

#include "agent/container_command.h"
#include "common/result.h"
#include "protocol/launch_spec.h"

namespace dlaunch {

struct ContainerHost {
  ContainerEngine engine = ContainerEngine::podman;
  std::string executable;
  std::string version;      // the first line of `ENGINE --version`
  std::string agent_token;  // the label value of this agent's containers
};

// Finds the engine (`auto`: the first of engine_candidates() on PATH), with
// the spec's agent token; an error when there is none.
Result<ContainerHost> find_container_engine(const ContainerSpec& spec);

// find_container_engine, then its version, and makes sure the image is there,
// pulling it if not. An error names the engine and quotes what it said.
Result<ContainerHost> prepare_container_host(const ContainerSpec& spec);

// `dlaunch check`: the engine that `spec.engine` finds here and its version,
// and with spec.image, the image's ID here (an image file: its size). Empty
// where there is none.
struct ContainerFacts {
  std::string engine;
  std::string image_id;
};
ContainerFacts container_facts(const ContainerSpec& spec);

// Removes the containers whose agent's reaper is gone (reaper_of()). Returns
// how many.
int sweep_orphaned_containers(const ContainerHost& host);

// Removes every container labelled with this agent's token (podman, docker),
// running or not. Returns how many it removed.
int sweep_containers(const ContainerHost& host);

}  // namespace dlaunch
