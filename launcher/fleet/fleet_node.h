// What every policy that drives agents knows of each node's agent, the same
// for a job's JobPolicy and for CheckPolicy: its rendezvous connection, whether
// its process and its link are gone, and what its Join said of its network.
// Each policy's own Node adds what only it needs. Also the one way a policy
// tells every node to stop.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "launcher/fleet/agent_link.h"
#include "protocol/messages.h"
#include "protocol/network_facts.h"
#include "rendezvous/state.h"

namespace dlaunch {

struct FleetNode {
  std::optional<ConnId> conn;   // from its Join
  bool agent_gone = false;      // its process exited (or could never start)
  bool conn_closed = false;     // its link is gone
  std::int32_t probe_port = 0;  // from its Join; node 0's is the one probed
  net::Interfaces interfaces;   // from its Join

  // Joined, and its link still up: a message reaches it.
  bool linked() const { return conn.has_value() && !conn_closed; }
};

// Who hears of a stop other than through the Stop message.
enum class UnlinkedNodes {
  // Left to the caller's own means (a job: their agents' exits and kills).
  left,
  // Told by closing their agent's stdin: one that never joined, or whose link
  // is gone, reads its end as "stop".
  stdin_closed,
};

// Every linked node gets `stop`; a joined agent learns it from Stop alone.
// Closing its stdin too would race the Stop, which relays carry a hop
// further: an agent whose input ends first has lost its coordinator and
// exits 1, and a Slurm step ends every other agent at a task's failure.
// `emit` takes an agent_link::Send or CloseStdin. Returns the Stop as sent.
template <class Nodes, class Emit>
proto::Stop stop_every_node(const Nodes& nodes, proto::Stop stop, UnlinkedNodes unlinked,
                            Emit&& emit) {
  // The reason is for the agents' logs; a rendezvous timeout that lists
  // thousands of missing nodes must still fit the message's limit.
  if (stop.reason.size() > proto::kMaxStopReason)
    stop.reason = stop.reason.substr(0, proto::kMaxStopReason - 4) + " ...";
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const FleetNode& n = nodes[i];
    if (n.linked()) {
      emit(agent_link::Send{*n.conn, stop});
    } else if (unlinked == UnlinkedNodes::stdin_closed && !n.agent_gone) {
      emit(agent_link::CloseStdin{static_cast<int>(i)});
    }
  }
  return stop;
}

}  // namespace dlaunch
