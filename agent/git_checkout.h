// --sync-git on a host: <workdir>/code/<name> at the job's one commit, before
// the agent joins. A clone made once is fetched into on later jobs. Hosts that
// share the directory (an NFS home) take turns under a lock, and the second
// finds the commit already there. git runs as the agent's user with the
// job's environment on top (credentials come from the host's SSH keys or
// credential helper, or GIT_* variables the job sets), never with a prompt.
//
// A running job's code never changes under it: each agent that checked the
// tree out holds it (a file in code/.<name>.dlaunch-jobs/, flock'd for the
// agent's life, so a killed agent's hold ends with it, on this host and on
// hosts sharing the directory alike). Another job that wants the same commit
// shares the tree as it is; one that wants another commit is refused, naming
// the job that holds it. The path stays <workdir>/code/<name>, the one that
// programs' command lines name.
#pragma once

#include <map>
#include <string>
#include <utility>

#include "common/result.h"
#include "protocol/launch_spec.h"

namespace dlaunch {

// An agent's hold on its checkout; released (and its file removed) when it
// is destroyed or the process ends.
class CheckoutHold {
 public:
  CheckoutHold(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  CheckoutHold(CheckoutHold&& other) noexcept;
  CheckoutHold& operator=(CheckoutHold&&) = delete;
  ~CheckoutHold();

 private:
  std::string path_;
  int fd_ = -1;
};

struct GitCheckout {
  std::string dir;
  CheckoutHold hold;
};

// The checkout's directory and this agent's hold on it; an error says what
// failed, in git's words, or which running job holds the tree at another
// commit.
Result<GitCheckout> checkout_git(const GitSpec& git, const std::string& workdir,
                                 const std::map<std::string, std::string>& job_env);

// The commit a checkout is at; empty when `dir` is none.
std::string checkout_commit(const std::string& dir);

}  // namespace dlaunch
