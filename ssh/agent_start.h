// Starting the cached agent on a host with a single exec channel. The user's
// shell reads its startup files for every channel (a conda or pyenv init can
// take a few hundred milliseconds), so the common case (agent already cached)
// must not pay for a separate "is it there?" round trip. The command picks the
// first copy that runs: ~/<cache>/agent-<sha256>, then /tmp/dlaunch-<uid>/ when
// that directory and file are ours. It prints "dlaunch-start <path>" on stdout
// and execs the agent, or prints "dlaunch-missing <arch>[ present]" and exits
// (having made the cache directory when it held nothing): then upload
// (upload.h) and start again.
#pragma once

#include <libssh2.h>

#include <map>
#include <string>

#include "ssh/session.h"

namespace dlaunch {

// The remote command line. It runs under /bin/sh whatever the login shell is,
// and is one line without ! or backslashes, so that csh and fish pass it on.
// `sha256_by_arch`: the agents at hand (common/agent_arch.h), by architecture;
// the host's `uname -m` picks one. `environment`: variables the agent starts
// with (names of letters, digits and '_'; values quoted).
std::string agent_start_command(const std::string& cache_dir,
                                const std::map<std::string, std::string>& sha256_by_arch,
                                const std::map<std::string, std::string>& environment = {});

struct AgentStart {
  LIBSSH2_CHANNEL* channel = nullptr;  // the agent's channel; null when missing
  std::string path;                    // the copy that runs
  std::string arch = {};               // when missing: the host's architecture
  bool present = false;  // when missing: the cache holds a copy that does not run (noexec?)
};

// Runs agent_start_command over a new channel and reads its first line.
// Throws SshError (naming the host, with the shell's stderr) when the command
// fails in any other way.
AgentStart start_cached_agent(SshSession& session, const std::string& command);

}  // namespace dlaunch
