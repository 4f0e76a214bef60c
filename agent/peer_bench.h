// An agent's side of `dlaunch check`'s matrix: for each PeerTest target (a
// peer's probe port on the address of its chosen interface), a TCP connect
// timed as the round trip, then bulk writes for the test's duration. The
// peer's ProbeListener drains and discards, and closes once it has read
// everything: the time until that close is when the last byte arrived, so
// the throughput counts delivered bytes, not bytes left in socket buffers.
#pragma once

#include <asio.hpp>
#include <functional>

#include "protocol/messages.h"

namespace dlaunch {

using PeerTestDone = std::function<void(proto::PeerTestReport)>;

// `done` runs once, on `io`, with one result per target in order. Targets run
// at the same time (a round gives each host one peer).
void run_peer_bench(asio::io_context& io, const proto::PeerTest& test, PeerTestDone done);

}  // namespace dlaunch
