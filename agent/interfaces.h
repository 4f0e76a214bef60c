// This host's network interfaces for the Join message: names, addresses with
// prefix lengths, MTU, up/down and kind (net::classify over /sys/class/net).
#pragma once

#include "net/interface.h"

namespace dlaunch {

// Up to proto::kMaxInterfaces, best kinds first, so a host with hundreds of
// container veths still reports its real NICs.
net::Interfaces list_interfaces();

}  // namespace dlaunch
