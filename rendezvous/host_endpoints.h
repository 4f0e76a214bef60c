// TCP endpoints for a host as the agent reaches it: a numeric address, or a
// name from /etc/hosts, never through NSS (common/host_lookup.h says why).
#pragma once

#include <asio.hpp>
#include <cstdint>
#include <string_view>
#include <vector>

#include "common/host_lookup.h"

namespace dlaunch {

// Empty when `host` is neither numeric nor in /etc/hosts (lookup_failure()
// says so).
std::vector<asio::ip::tcp::endpoint> endpoints_without_nss(std::string_view host, int port);

}  // namespace dlaunch
