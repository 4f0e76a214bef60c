// Addresses as agents need them. The agent resolves no names through NSS
// (common/host_lookup.h), so the launcher resolves the rendezvous host once,
// as this machine sees it.
#pragma once

#include <string>

namespace dlaunch {

// `host` unchanged when it is empty or numeric; else its first address here,
// IPv4 first. A name this machine cannot resolve is kept, for the hosts'
// /etc/hosts to answer.
std::string address_for_agents(const std::string& host);

}  // namespace dlaunch
