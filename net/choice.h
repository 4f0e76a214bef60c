// From every node's probe of node 0's candidate addresses to one MASTER_ADDR
// and, per node, the interface its ranks should use (NCCL_SOCKET_IFNAME,
// GLOO_SOCKET_IFNAME); or, when no candidate was reached by every node, the
// table that says who could not reach what. Pure: unit-tested with made-up
// probes of thousands of nodes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "net/candidates.h"
#include "net/interface.h"

namespace dlaunch::net {

struct NodeProbe {
  std::string label;                   // the host's name, for messages
  Interfaces interfaces;               // as its agent reported them
  std::vector<ProbeOutcome> outcomes;  // one per candidate, in the candidates' order
  bool answered = false;               // false: the node sent no report
};

// A node's entry from what it reported (nullopt: nothing yet). A report
// without exactly one outcome per candidate counts as no answer.
NodeProbe node_probe(std::string label, Interfaces interfaces,
                     std::optional<std::vector<ProbeOutcome>> outcomes, std::size_t candidates);

struct MasterChoice {
  std::size_t candidate = 0;  // index into the candidates
  std::string address;
  std::vector<std::string> interface_by_node;  // empty where unknown
  std::vector<std::string> warnings;           // routes over loopback, virtual or small-MTU links
};

struct ChoiceResult {
  std::optional<MasterChoice> choice;
  // Without a choice: the error, with the table and what to set. With one:
  // the candidates, how many nodes reached each, and why this one (for -v).
  std::string report;
};

ChoiceResult choose_master(const std::vector<Candidate>& candidates,
                           const CandidateSources& sources, const std::vector<NodeProbe>& nodes);

// At most this many node rows in a report; the rest are counted.
inline constexpr std::size_t kMaxReportRows = 20;

}  // namespace dlaunch::net
