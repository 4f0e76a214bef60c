// Who holds a TCP port on this host, for the message that refuses a
// --master-port already in use on node 0: the kernel lists listening sockets
// in /proc/net/tcp and tcp6 by inode, and a process's /proc/PID/fd links name
// the socket inodes it holds. Only processes this user may look into are
// found (all of them as root); otherwise the port is named without a holder.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dlaunch {

struct PortHolder {
  int pid = 0;
  std::string command;  // /proc/PID/comm
};

// Pure: the inodes of the sockets listening on `port` in the text of
// /proc/net/tcp or /proc/net/tcp6 (state 0A is LISTEN).
std::vector<unsigned long> listening_inodes(std::string_view proc_net_tcp, int port);

// The first readable process holding a socket that listens on `port`.
std::optional<PortHolder> port_holder(int port);

// "port 29500 is held by pid 123 (python3)", or "port 29500 is in use" when
// the holder cannot be seen.
std::string describe_port_in_use(int port);

}  // namespace dlaunch
