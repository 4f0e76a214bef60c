// The launch plan: which nodes exist, how each is reached, how many ranks each
// runs, where the rendezvous listens and what the agents connect to. Pure: made
// from options and the hosts file with no I/O, so every mode is unit-tested.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/result.h"
#include "launcher/config/environment.h"
#include "launcher/hosts/hosts_file.h"
#include "launcher/config/options.h"

namespace dlaunch {

struct PlannedNode {
  int node_rank = 0;
  HostEntry host;
  bool local = true;  // started by fork/exec, not SSH
  int nproc = 0;      // 0: decided by the agent (one per GPU, else 1)
};

struct Plan {
  Mode mode = Mode::standalone;
  std::string job;
  std::vector<std::string> command;
  int nnodes = 1;
  // Nodes this coordinator starts agents for: all in standalone and hosts mode;
  // only this machine's in manual mode (the other nodes start their own).
  std::vector<PlannedNode> nodes;
  bool hosts_in_prefix = false;  // several hosts: prefix lines with the host too

  std::string master_addr;  // empty: this machine's name (decided at start)
  // Jobs over several machines pick MASTER_ADDR at start: every agent probes
  // node 0's candidate addresses (net/candidates.h) and the first that all
  // reach wins; master_addr above is then unused.
  bool probe_master = false;
  std::string configured_master;     // [rendezvous] master_address or --master-addr
  std::string configured_master_by;  // where it was set, for messages
  std::string node0_address;         // node 0's address in the hosts file
  bool all_nodes_local = false;
  std::optional<int> master_port;
  std::string rdzv_bind;      // address the rendezvous listens on
  bool rdzv_via_ssh = false;  // [rendezvous] via = "ssh" / --rdzv-via-ssh
  int rdzv_port = 0;          // 0: any free port
  std::string rdzv_connect;   // what agents connect to; empty: per host (SSH local address)
  bool coordinator = true;    // false: manual mode node > 0 (runs only an agent)
  // Every rank's variables above its host's login environment: forwarded from
  // the coordinator's (lowest), then each host's `env`, then --env/--env-file.
  EnvVars forwarded_env = {};
  EnvVars command_line_env = {};
  // Those of command_line_env that came from --env-file, for --dry-run's labels.
  std::set<std::string> env_file_names = {};
  int node_rank = 0;  // manual mode: this node
  // Options that have no effect as given, for the user to hear once.
  std::vector<std::string> warnings;
};

Plan make_plan(const Options& options, const HostsFile* hosts, const std::string& job);

// A job with spares or --nnodes MIN:MAX (launcher/fleet/membership.h).
bool elastic(const Plan& plan, const Options& options);
std::size_t spare_count(const Plan& plan);
// --spares, `spare = true` and MIN:MAX against the host list's size.
Result<void> check_elastic(const Plan& plan, const Options& options);

// "--ranks-filter 5,7: this job has ranks 0..3 only" when the filter names
// ranks a world of `world` ranks does not have.
Result<void> ranks_outside_world(const std::set<int>& filter, int world);

// An error when --ranks-filter names ranks the plan cannot have (only when the
// world size is known before the rendezvous: every node's rank count is set).
Result<void> check_ranks_filter(const Plan& plan, const std::set<int>& filter);

// Human-readable plan for --dry-run: nodes, rank ranges and each rank's environment.
std::string describe_plan(const Plan& plan, const Options& options);

// "mnist_dist-20261122-173000" from the program path and a time.
std::string default_job_name(const std::string& program, long long unix_seconds);

}  // namespace dlaunch
