// Socket helpers shared by the agent and the launcher.
#pragma once

namespace dlaunch {

// A TCP port that was free on this host a moment ago (bind to port 0); 0 when
// none could be found.
int find_free_port();

}  // namespace dlaunch
