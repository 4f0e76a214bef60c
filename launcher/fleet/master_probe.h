// The MASTER_ADDR probe of a run of agents, the one a job and `dlaunch check`
// both make: every node tries node 0's candidate addresses at node 0's probe
// port, through net::ProbeRounds (a window of connections in flight, rounds of
// scouts on a big fleet), and net::choose_master picks from what they report.
// Pure: what to send, and what to say, comes back to the policy that owns the
// agents' connections.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/log.h"
#include "net/candidates.h"
#include "net/choice.h"
#include "net/probe_rounds.h"
#include "protocol/messages.h"

namespace dlaunch {

class MasterProbe {
 public:
  // Connections to node 0's probe listener in flight at once, at most: half
  // of Linux's default accept queue (4,096), beyond which the kernel drops
  // SYNs that the prober's kernel resends only after a second.
  static constexpr std::size_t kConnectionsInFlight = 2048;

  struct Send {
    std::size_t node = 0;
    proto::Probe probe;
  };
  struct Note {
    log::Level level = log::Level::info;
    std::string text;
  };
  struct Reply {
    std::vector<Send> sends;
    std::vector<Note> notes;
    // A node reached none of the candidates twice, in rounds: no candidate
    // can be reached by every node. Why, naming the node and each address.
    std::optional<std::string> unreachable;
  };

  // `candidates`: node 0's, in order of preference (not empty); `port`: node 0's probe port.
  MasterProbe(std::vector<net::Candidate> candidates, std::int32_t port, std::int32_t timeout_ms,
              std::size_t nodes, std::size_t connections_in_flight = kConnectionsInFlight);

  // The nodes already joined are passed to on_joined first; those lost before, to on_lost.
  Reply start();
  std::vector<Send> on_joined(std::size_t node);
  // `label`: the node's name, for the notes.
  Reply on_report(std::size_t node, const std::string& label,
                  std::vector<net::ProbeOutcome> outcomes);
  Reply on_lost(std::size_t node);

  bool complete() const { return rounds_.complete(); }
  bool reported(std::size_t node) const { return rounds_.reported(node); }
  std::size_t reports_missing() const { return rounds_.reports_missing(); }
  const std::vector<net::Candidate>& candidates() const { return candidates_; }
  // Per node, its entry for net::choose_master: once complete, or when the
  // probe is cut short (a node that has not reported then did not answer).
  std::vector<net::NodeProbe> take_probes(std::vector<std::string> labels,
                                          std::vector<net::Interfaces> interfaces);

 private:
  std::vector<Send> sends(const std::vector<net::ProbeRounds::Request>& requests) const;

  std::vector<net::Candidate> candidates_;
  proto::Probe probe_;  // every candidate; a request may ask for fewer
  net::ProbeRounds rounds_;
};

// Per node, its entry for net::choose_master: what `probe` collected (taken
// from it), or, where no probe ran (one candidate), entries without answers.
std::vector<net::NodeProbe> node_probes(std::optional<MasterProbe>& probe,
                                        std::vector<std::string> labels,
                                        std::vector<net::Interfaces> interfaces);

}  // namespace dlaunch
