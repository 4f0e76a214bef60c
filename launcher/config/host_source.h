// The one way a hosts-mode command gets its hosts: from whichever source the
// options name (TOML hosts file, hostfile, -H or Slurm's variables), then
// --include or --exclude. `run` and `check` both call it.
#pragma once

#include "launcher/hosts/hosts_file.h"
#include "launcher/config/options.h"
#include "launcher/hosts/slurm_hosts.h"

namespace dlaunch {

// Pure: Slurm's variables come from `env`. With Slurm's hosts, an explicit
// --nproc-per-node wins over the counts Slurm's variables give. Warnings (a
// hostfile's ignored max_slots) are in the result's `warnings`.
HostsFileResult load_host_source(const Options& o, const Environment& env);

// deepspeed's --num_nodes (the first N hosts), --num_gpus (at most N ranks
// per host) and --ssh_port (the port of every SSH host that names none).
HostsFileResult apply_deepspeed_counts(HostsFile hosts, const Options& o);

// The same, reading Slurm's variables from this process's environment.
HostsFileResult load_host_source(const Options& o);

}  // namespace dlaunch
