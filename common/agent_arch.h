// Which agent a host gets. There is one static agent per CPU architecture,
// chosen by the host's `uname -m`: this machine's is dlaunch-agent; the
// others, cross-built (-DDLAUNCH_AGENT_ARCHES), sit beside it as
// dlaunch-agent-<arch>, or in ../lib/dlaunch once installed.
#pragma once

#include <map>
#include <string>
#include <string_view>

namespace dlaunch {

// This build's architecture, as `uname -m` names it on Linux.
std::string_view native_arch();

// `uname -m`'s answer in dlaunch's names: amd64 is x86_64, arm64 is aarch64;
// anything else as it is.
std::string normalize_arch(std::string_view uname_machine);

// The agents at hand, by architecture: `native_agent` for this machine's, and
// each dlaunch-agent-<arch> in its directory or in `extra_dir`.
std::map<std::string, std::string> agents_by_arch(const std::string& native_agent,
                                                  const std::string& extra_dir);

// Why a host of `arch` cannot get an agent, naming those at hand.
std::string no_agent_message(std::string_view arch,
                             const std::map<std::string, std::string>& agents);

}  // namespace dlaunch
