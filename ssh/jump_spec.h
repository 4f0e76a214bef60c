// The text of a jump host chain, as `jump` in the hosts file and ProxyJump in
// ~/.ssh/config write it:
//
//   chain = hop *( "," hop )      first hop first: the coordinator connects to it
//   hop   = [ user "@" ] host [ ":" port ]
//   host  = name | "[" IPv6 address "]"
//
// "none" means no jump host (ProxyJump none turns off one set by a wider
// Host block). A name may be an ~/.ssh/config alias; it is resolved there by
// the SSH transport, not here. Pure, so that the hosts file can report a bad
// value at its line and column; no libssh2 here.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dlaunch {

// Each hop is one more SSH session, thread and round trip before the host is
// reached. Two cover a bastion in front of a private network with a second
// one inside; more is far more likely a typo than a real network.
inline constexpr std::size_t kMaxJumpHops = 4;

struct JumpHop {
  std::string user;         // empty: ~/.ssh/config, else the host's own user
  std::string host;         // without brackets
  std::optional<int> port;  // unset: ~/.ssh/config, else 22

  bool operator==(const JumpHop&) const = default;
};

struct JumpChain {
  std::vector<JumpHop> hops;  // empty for "none"
  std::string error;          // set when the text is not a chain; hops is then empty
};

JumpChain parse_jump_chain(std::string_view text);

// "user@host:port" as written, for messages.
std::string to_string(const JumpHop& hop);

}  // namespace dlaunch
