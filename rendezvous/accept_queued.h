// Taking a listener's queued connections in one go. Asio's async_accept takes
// one per handler, and each handler waits behind every other ready one: when
// thousands of peers arrive at once (agents joining node 0, or probing its
// MASTER_ADDR), the kernel's accept queue (net.core.somaxconn) then overflows,
// and each SYN it drops costs its sender the kernel's one-second resend.
#pragma once

#include <asio.hpp>
#include <functional>

namespace dlaunch {

using TakeConnection =
    std::function<void(asio::ip::tcp::socket socket, const asio::ip::tcp::endpoint& peer)>;

// Accepts up to `at_most` queued connections from `acceptor` (which must be
// non-blocking), handing each to `take`; a peer that reset before its turn is
// skipped.
// Returns the error that stopped it (out of descriptors, say), or none when
// the queue was emptied or `at_most` were taken.
asio::error_code accept_queued(asio::ip::tcp::acceptor& acceptor, int at_most,
                               const TakeConnection& take);

}  // namespace dlaunch
