// Starts dlaunch-agent on this machine with fork/exec: the launch spec goes
// down a pipe on its stdin, its stderr comes back on another. The agent gets its
// own process group so that a terminal's Ctrl-C reaches only the coordinator,
// which then stops the job in order.
#pragma once

#include <memory>

#include "launcher/transport/transport.h"

namespace dlaunch {

std::unique_ptr<Transport> make_local_transport(asio::io_context& io);

}  // namespace dlaunch
