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

// The part of the rule that needs no lookup: `host` is a loopback spelling
// (common/address.h), or this machine's host name `host_name` or its first
// label, in any case (host names are). `dlaunch top job` tells by it which
// hosts of a job's record are here, where resolving every host would be slow.
bool is_this_host_name(const std::string& host, const std::string& host_name);

// The whole decision over given facts (unit-tested): `resolved` are `host`'s
// addresses, `local` this machine's.
bool names_this_machine(const std::string& host, const std::string& host_name,
                        const std::vector<std::string>& resolved,
                        const std::vector<std::string>& local);

}  // namespace dlaunch
