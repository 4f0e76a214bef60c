// A rendezvous relay: a process of the coordinator's that accepts agents on
// the coordinator's listener, does their handshake and holds their
// connections, so that a job may have more agents than one process may open
// descriptors. It forwards every joined agent's messages to the coordinator
// over a local socket, and the coordinator's messages to the agents
// (relay_wire.h). It ends when that socket closes: with the coordinator.
#pragma once

namespace dlaunch {

// dlaunch runs itself under this name to be a relay (main() looks at argv[0]).
inline constexpr const char* kRelayProgramName = "dlaunch-rendezvous-relay";
// What it finds open: the listener, and its socket to the coordinator.
inline constexpr int kRelayListenerFd = 3;
inline constexpr int kRelayChannelFd = 4;

// Runs the relay to its end; returns the process's exit code.
int run_rendezvous_relay();

}  // namespace dlaunch
