// Starts agents as one Slurm job step: inside an allocation, the nodes'
// agents run as the tasks of a single `srun` (srun_argv.h), so no SSH key is
// needed, Slurm's accounting and cgroups see every rank, and `scancel` ends
// the agents and, through their guardians, every rank.
//
// The coordinator starts its nodes one after the other in one loop; this
// transport collects the start() calls made before control returns to the
// io_context and runs one srun for all of them. Every node's launch spec goes
// to srun's stdin, one after the other in start order; srun hands the whole
// stream to every agent, which keeps its own (agent/slurm_spec.h). srun's
// merged output, labelled per task, is split back into each node's on_stderr
// (task i is the i-th node: a step's tasks follow SLURM_STEP_NODELIST, which
// Slurm sorts as it sorts SLURM_JOB_NODELIST, the order of the plan). Each
// node's on_exit fires when srun reports its task's failure, or when srun
// exits (srun_output.h).
//
// One step, one stdin: closing an agent's stdin or killing it cannot be done
// for one node alone. A handle's request is carried out for the step once
// every node still running has made it (the coordinator asks it of all nodes
// when the job stops; a single node's request while the others run just waits
// for theirs, so they stop in order through the rendezvous). kill() sends
// srun SIGTERM, on which srun sends SIGKILL to every agent.
#pragma once

#include <memory>
#include <string>

#include "launcher/transport/transport.h"

namespace dlaunch {

struct SlurmOptions {
  std::string srun = "srun";  // found on PATH
  std::string job_name;       // the step's name (the dlaunch job)
  bool elastic = false;       // the step outlives a lost node's task (srun_argv.h)
};

std::unique_ptr<Transport> make_slurm_transport(asio::io_context& io, SlurmOptions options);

// The address of this machine that traffic to `host` leaves from (a UDP
// socket's local end after connect: no packet is sent), or "" when `host`
// does not resolve. What a node's agent reaches the rendezvous at.
std::string local_address_towards(const std::string& host);

}  // namespace dlaunch
