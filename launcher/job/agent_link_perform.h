// The one way a runner carries out agent_link actions: messages and closes go
// to the rendezvous server, stdin and kills to the node's agent handle (absent
// for nodes that start their own agent), log lines to the log.
#pragma once

#include "launcher/job/agent_link.h"
#include "rendezvous/service.h"

namespace dlaunch::agent_link {

// `agents`: indexed by node rank, each with a `handle` (a unique_ptr<AgentHandle>).
template <class Agents>
void perform(RendezvousService& server, Agents&, const Send& a) {
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
