// The job's shared secret. dlaunch makes a fresh 256-bit one per job when it
// starts the agents itself. In manual mode every node must hold the same one:
// from a file, from the environment, or made by node 0, which then prints the
// line that starts the other nodes with it (as `kubeadm join --token` does).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/result.h"

namespace dlaunch {

// The environment variable that carries a manual job's secret to a node: a
// process's environment is readable only by its user, its argv by everyone.
inline constexpr const char* kSecretEnv = "DLAUNCH_SECRET";

struct ManualSecretInputs {
  int nnodes = 1;
  int node_rank = 0;
  std::string secret_file = {};                // --secret-file or $DLAUNCH_SECRET_FILE
  std::optional<std::string> secret_env = {};  // $DLAUNCH_SECRET
  bool insecure_no_secret = false;             // --insecure-no-secret
};

struct ManualSecret {
  std::string secret;      // empty: an open job, any host that reaches the port may join
  bool generated = false;  // node 0 made it: the other nodes need it printed
  std::string warning;     // e.g. a secret file that others can read
};

// A secret file's secret (trailing whitespace dropped), with a warning when
// others can read it; an error when it is missing, unreadable or empty.
Result<ManualSecret> read_secret_file(const std::string& path);

// Which secret a manual-mode node uses: --secret-file, else $DLAUNCH_SECRET,
// else (with --insecure-no-secret) none, else node 0 makes one. A node other
// than 0 with none of these gets the error that says where its secret comes from.
// Reads the secret file; the error names it.
Result<ManualSecret> choose_manual_secret(const ManualSecretInputs& in);

// The line node 0 prints for the other nodes: "DLAUNCH_SECRET=<secret>" and
// node 0's own command line, quoted for a shell, with its node rank (in any
// spelling: --node-rank 0, --node_rank=0, --rank 0) as "<N>".
std::string other_nodes_command(const std::vector<std::string>& argv, const std::string& secret);

}  // namespace dlaunch
