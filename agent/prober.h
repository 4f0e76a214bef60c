// An agent's side of the MASTER_ADDR probe: a TCP connect to each of node 0's
// candidate addresses at its probe port, all at once, each with the Probe's
// timeout. An address counts as reached once node 0's agent has answered the
// connection with its byte (ProbeListener), so a port some other listener or
// middlebox accepts does not pass. Reports per address whether it was reached,
// how long that took (connect and answer: a round trip more than the connect),
// and which of this host's interfaces the connection left by (the
// interface NCCL and Gloo should use to reach that address; for an address not
// reached, the interface the routing table would send it by, so `dlaunch
// check` can still test the host's other links on it).
#pragma once

#include <asio.hpp>
#include <functional>
#include <vector>

#include "net/choice.h"
#include "net/interface.h"
#include "protocol/messages.h"

namespace dlaunch {

using ProbeDone = std::function<void(std::vector<net::ProbeOutcome>)>;

// `done` runs once, on `io`, with one outcome per address in order.
void probe_addresses(asio::io_context& io, const proto::Probe& probe,
                     const net::Interfaces& interfaces, ProbeDone done);

}  // namespace dlaunch
