// Socket helpers shared by the agent and the launcher.
#pragma once

namespace dlaunch {

// A TCP port that was free on this host a moment ago (bind to port 0); 0 when
// none could be found.
int find_free_port();

// Whether a process of this host listens on TCP `port` (any address): binding
// it, as a listener does, fails with EADDRINUSE. Connections left in
// TIME_WAIT do not count.
bool port_listened_on(int port);

}  // namespace dlaunch
