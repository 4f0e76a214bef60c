// The one place a node's launch spec is made from the plan: the coordinator
// uses it for every agent it starts, a manual-mode node for the agent it runs
// in-process, and --dry-run to show each rank's environment. Pure.
#pragma once

#include <cstdint>
#include <string>

#include "launcher/config/options.h"
#include "launcher/config/python_program.h"
#include "launcher/plan/plan.h"
#include "protocol/launch_spec.h"

namespace dlaunch {

// What only the running launcher knows: the secret, where the rendezvous is as
// this node reaches it, and the directory local ranks start in.
struct LaunchContext {
  std::string secret;
  std::string rdzv_host;
  std::uint16_t rdzv_port = 0;
  // The launcher's working directory: every node's default (one that lacks it uses home).
  std::string local_workdir;
};

// The name a node goes by in prefixes and messages: its hosts-file name, else
// "node<N>".
std::string node_label(const PlannedNode& node);

// The Python a host runs .py programs and -m with, and what chose it
// (choose_python's precedence, with the host's `python` key).
PythonFor python_for(const Options& options, const HostEntry& host);

LaunchSpec make_launch_spec(const Plan& plan, const PlannedNode& node, const Options& options,
                            const LaunchContext& context);

}  // namespace dlaunch
