// Node 0's open files: one rendezvous connection per agent, one SSH session
// per host it starts an agent on over SSH, three pipes per agent it starts on
// this machine, some of its own, and the ranks' log files with what is left.
// A job that cannot fit its connections under the descriptor limit would wait
// out the rendezvous timeout for agents it can never accept: it is refused at
// once instead. Pure: the limit is passed in.
#pragma once

#include <cstddef>
#include <string>

namespace dlaunch {

struct DescriptorNeeds {
  std::size_t nnodes = 0;        // every node's agent connects to node 0
  std::size_t ssh_hosts = 0;     // agents started over SSH by this process
  std::size_t local_agents = 0;  // agents (or srun) started here by fork/exec
};

struct DescriptorBudget {
  std::size_t needed = 0;          // without the rank log files
  std::size_t rank_log_files = 0;  // how many may be open at once
  std::string problem = {};        // non-empty: the job cannot run under this limit
};

// Listeners, the event loop, timers, the job record, this process's own logs.
inline constexpr std::size_t kOwnDescriptors = 64;
// The fewest rank log files worth running with (they are reopened as needed).
inline constexpr std::size_t kMinRankLogFiles = 64;

DescriptorBudget descriptor_budget(const DescriptorNeeds& needs, std::size_t limit);

}  // namespace dlaunch
