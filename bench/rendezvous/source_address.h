// The address a simulated agent connects from. A real fleet has one address
// per node; the load's agents all run on this machine, and from 127.0.0.1
// alone they would share its ~28,000 ephemeral ports (net.ipv4.
// ip_local_port_range). At 19,000 agents their rendezvous connections, their
// probes and the TIME_WAITs a previous run left (51,723 after one 19,000-node
// run) crowd that range: connect() then spends its time searching it (77 CPU
// s of the load's system time in one run) and probes time out, which is this
// machine's limit, not node 0's. So node N connects from 127.1.0.0 + N, any
// address of 127.0.0.0/8 being loopback's.
#pragma once

#include <sys/socket.h>

namespace dlaunch::load {

// Binds `fd` to node `node`'s own loopback source address when `destination`
// is an IPv4 loopback address (the port is still picked at connect, per
// destination: IP_BIND_ADDRESS_NO_PORT). True when bound or when there is
// nothing to do (another destination); false with errno set on failure.
bool bind_node_source(int fd, const sockaddr* destination, int node);

}  // namespace dlaunch::load
