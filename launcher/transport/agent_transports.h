// How `dlaunch run`, `check` and `top node` start their agents: fork/exec for
// this machine; for the other hosts srun inside a Slurm job, else SSH with the
// options' settings.
#pragma once

#include <asio.hpp>
#include <string>

#include "launcher/config/options.h"
#include "launcher/transport/transport.h"

namespace dlaunch {

// `o` must outlive the result. `via_ssh`: agents reach the rendezvous through
// their SSH connection (--rdzv-via-ssh or the hosts file's via = "ssh");
// `step_name`: the srun step's --job-name; `elastic`: a job that goes on
// without a lost node (its srun step must too).
AgentTransports make_agent_transports(asio::io_context& io, const Options& o, bool via_ssh,
                                      std::string step_name, bool elastic = false);

}  // namespace dlaunch
