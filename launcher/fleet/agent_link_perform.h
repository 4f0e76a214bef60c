// The one way a runner carries out agent_link actions: messages and closes go
// to the rendezvous server, stdin and kills to the node's agent handle (absent
// for nodes that start their own agent), log lines to the log.
#pragma once

#include "launcher/fleet/agent_link.h"
#include "launcher/transport/agent_address.h"
#include "rendezvous/service.h"

namespace dlaunch::agent_link {

// `agents`: indexed by node rank, each with a `handle` (a unique_ptr<AgentHandle>).
template <class Agents>
void perform(RendezvousService& server, Agents&, const Send& a) {
  // Agents resolve no names (common/host_lookup.h): a name among node 0's
  // candidates (its hosts-file entry) is probed at its address here.
  if (const auto* probe = std::get_if<proto::Probe>(&a.message)) {
    proto::Message resolved = *probe;
    for (auto& address : std::get<proto::Probe>(resolved).addresses)
      address = address_for_agents(address);
    server.send(a.to, resolved);
    return;
  }
  server.send(a.to, a.message);
}
template <class Agents>
void perform(RendezvousService& server, Agents&, const CloseConnection& a) {
  server.close(a.conn, a.reason);
}
template <class Agents>
void perform(RendezvousService&, Agents& agents, const CloseStdin& a) {
  if (auto& handle = agents[static_cast<std::size_t>(a.node)].handle) handle->close_stdin();
}
template <class Agents>
void perform(RendezvousService&, Agents& agents, const KillAgent& a) {
  if (auto& handle = agents[static_cast<std::size_t>(a.node)].handle) handle->kill();
}
template <class Agents>
void perform(RendezvousService&, Agents&, const Log& a) {
  if (log::enabled(a.level)) log::write(a.level, a.text);
}

}  // namespace dlaunch::agent_link
