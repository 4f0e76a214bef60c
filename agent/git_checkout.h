// --sync-git on a host: <workdir>/code/<name> at the job's one commit, before
// the agent joins. A clone made once is fetched into on later jobs. Hosts that
// share the directory (an NFS home) take turns under a lock, and the second
// finds the commit already there. git runs as the agent's user with the
// job's environment on top (credentials come from the host's SSH keys or
// credential helper, or GIT_* variables the job sets), never with a prompt.
#pragma once

#include <map>
#include <string>

#include "common/result.h"
#include "protocol/launch_spec.h"

namespace dlaunch {

// Returns the checkout's directory; an error says what failed, in git's words.
Result<std::string> checkout_git(const GitSpec& git, const std::string& workdir,
                                 const std::map<std::string, std::string>& job_env);

// The commit a checkout is at; empty when `dir` is none.
std::string checkout_commit(const std::string& dir);

}  // namespace dlaunch
