// Node 0's open files: one rendezvous connection per agent, one SSH session
// per host it starts an agent on over SSH, three pipes per agent it starts on
// this machine, some of its own, and the ranks' log files with what is left.
// When the agents' connections do not fit under the descriptor limit (a hard
// limit of 20,000 and a job of 20,000 nodes), relay processes hold them, each
// under its own limit, and the coordinator one socket per relay. What cannot
// be relayed (SSH sessions, local agents' pipes) must still fit: a job that
// does not is refused at once rather than waiting out the rendezvous timeout.
// Pure: the limit is passed in.
#pragma once

#include <cstddef>
#include <string>

#include "launcher/plan/plan.h"

namespace dlaunch {

struct DescriptorNeeds {
  std::size_t nnodes = 0;        // every node's agent connects to node 0
  std::size_t ssh_hosts = 0;     // agents started over SSH by this process
  std::size_t local_agents = 0;  // agents (or srun) started here by fork/exec
  std::string run = "a job";     // what the problem calls it
};

// What running `plan`'s agents from this process needs; `srun`: one srun
// starts every node's agent (Slurm), its pipes like a local agent's.
DescriptorNeeds descriptor_needs(const Plan& plan, bool srun);

struct DescriptorBudget {
  std::size_t needed = 0;          // without the rank log files
  std::size_t rank_log_files = 0;  // how many may be open at once
  // 0: the coordinator holds every agent's connection itself. Otherwise this
  // many relay processes share the listener, each holding at most
  // sessions_per_relay connections (handshakes included).
  std::size_t relays = 0;
  std::size_t sessions_per_relay = 0;
  // Without relays: room for connections still in the handshake beyond the
  // nodes' own (retries, strangers), taken from the rank logs' share. Past it
  // they evict each other, so that a flood never takes the descriptors the
  // job's own files and agents need.
  std::size_t handshake_room = 0;
  std::string problem = {};  // non-empty: the job cannot run under this limit

  // The connections one holder (a relay, else this process) may hold.
  std::size_t sessions_each() const {
    return relays > 0 ? sessions_per_relay : nnodes + handshake_room;
  }
  std::size_t nnodes = 0;
};

// Listeners, the event loop, timers, the job record, this process's own logs.
inline constexpr std::size_t kOwnDescriptors = 64;
// A relay's own: its listener, its socket to the coordinator, the event loop.
inline constexpr std::size_t kRelayOwnDescriptors = 64;
// Relays hold room beyond the node count for retries and strays in the
// handshake, so that the last agents are not kept waiting in the queue.
inline constexpr std::size_t kRelayMargin = 256;
// The fewest rank log files worth running with (they are reopened as needed).
inline constexpr std::size_t kMinRankLogFiles = 64;
// The most handshakes held beyond the nodes' own, where the limit allows.
inline constexpr std::size_t kHandshakeRoom = 1024;

DescriptorBudget descriptor_budget(const DescriptorNeeds& needs, std::size_t limit);

}  // namespace dlaunch
