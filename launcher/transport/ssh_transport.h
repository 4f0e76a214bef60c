// Starts agents on remote hosts over SSH (libssh2): connect (through jump
// hosts when `jump` or ProxyJump says so: ssh/jump.h), verify the host key
// against known_hosts, authenticate, start the cached agent with a single
// exec channel (ssh_agent_start.h), uploading it first when the host has no
// copy of this build that runs; the channel's stdin carries the launch spec.
// One thread per host; --ssh-parallel bounds how many are connecting at once.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "launcher/transport/transport.h"

namespace dlaunch {

struct SshOptions {
  int parallel = 64;                  // connections being set up at once (--ssh-parallel)
  int connect_timeout_s = 10;         // --ssh-timeout
  bool accept_new_host_keys = false;  // --accept-new-host-keys (OpenSSH's accept-new)
  std::string home;                   // the user's home; empty: $HOME
  // Agent binary hash cache directory on the remote host, relative to its home.
  // The environment variable DLAUNCH_REMOTE_CACHE overrides it: the SSH tests
  // run their sshd servers as the local user, whose real home they must not touch.
  std::string remote_cache_dir = ".cache/dlaunch";
  // [rendezvous] via = "ssh" / --rdzv-via-ssh: each agent reaches the
  // rendezvous through a reverse forward on its own SSH connection
  // (ssh/reverse_forward.h) instead of connecting to the coordinator.
  bool rendezvous_via_ssh = false;
};

// For rendezvous_via_ssh: the launch spec stream `spec` (as AgentLaunch's
// make_stdin makes it) pointed at the host's end of the forward,
// 127.0.0.1:`remote_port`, with the coordinator's rendezvous port it named
// before. nullopt when `spec` is not one launch spec.
struct ForwardedSpec {
  std::string bytes;
  int coordinator_port = 0;
};
std::optional<ForwardedSpec> route_spec_through_forward(std::string_view spec, int remote_port);

std::unique_ptr<Transport> make_ssh_transport(asio::io_context& io, const SshOptions& options);

}  // namespace dlaunch
