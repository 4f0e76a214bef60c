// Whether an address names this machine: how a manual-mode node started with
// torchrun's line (the same on every node, no --node-rank) knows that it is
// node 0, the one that holds --rdzv-endpoint's (or --master-addr's) host.
#pragma once

#include <string>
#include <vector>

namespace dlaunch {

// True when `host` is a loopback spelling, this machine's host name (or its
// first label), or resolves to an address of one of its interfaces.
bool this_machine_is(const std::string& host);

// The same decision over given facts (unit-tested): `resolved` are `host`'s
// addresses, `local` this machine's.
bool names_this_machine(const std::string& host, const std::string& host_name,
                        const std::vector<std::string>& resolved,
                        const std::vector<std::string>& local);

}  // namespace dlaunch
