// Which addresses of node 0 may serve as MASTER_ADDR, best first. Pure: the
// coordinator sends the list to every agent, each probes them, and
// `choose_master` (choice.h) takes the first that every node reached.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "net/interface.h"

namespace dlaunch::net {

enum class CandidateSource {
  configured,  // [rendezvous] master_address in the hosts file, or --master-addr
  hosts_file,  // node 0's own address in the hosts file (what the coordinator reaches it by)
  interface,   // an address node 0's agent found on one of its interfaces
};

struct Candidate {
  std::string address;
  CandidateSource source = CandidateSource::interface;
  std::string interface;  // for `interface`: which one, for messages
  InterfaceKind kind = InterfaceKind::other;
};

struct CandidateSources {
  std::string configured;
  std::string configured_by;  // "master_address in hosts.toml", "--master-addr"
  std::string node0_address;
  Interfaces node0_interfaces;
  bool all_nodes_local = false;  // every node is this machine: loopback is fine
};

// In order: the configured address; node 0's hosts-file address (unless it is
// a loopback or link-local spelling and other machines take part); then node
// 0's interface addresses, interfaces that are up only, real NICs first and
// virtual ones last (InterfaceKind's order), IPv4 before IPv6 on each, no
// link-local addresses, loopback only when every node is this machine. An
// address listed twice keeps its first place.
std::vector<Candidate> master_candidates(const CandidateSources& sources);

// "master_address in hosts.toml", "node 0's address in the hosts file",
// "node 0's interface ens5 (physical)".
std::string describe(const Candidate& candidate, const CandidateSources& sources);

}  // namespace dlaunch::net
