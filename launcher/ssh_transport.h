// Starts agents on remote hosts over SSH (libssh2): connect, verify the host
// key against known_hosts, authenticate, upload the agent when its hash is not
// cached on the host, and run it over an exec channel whose stdin carries the
// launch spec.
#pragma once

#include <memory>
#include <string>

#include "launcher/transport.h"

namespace dlaunch {

struct SshOptions {
  int parallel = 64;                  // connections being set up at once (--ssh-parallel)
  int connect_timeout_s = 10;         // --ssh-timeout
  bool accept_new_host_keys = false;  // --accept-new-host-keys (OpenSSH's accept-new)
  std::string home;                   // the user's home; empty: $HOME
  // Agent binary hash cache directory on the remote host, relative to its home.
  std::string remote_cache_dir = ".cache/dlaunch";
};

std::unique_ptr<Transport> make_ssh_transport(asio::io_context& io, const SshOptions& options);

}  // namespace dlaunch
