// The part of ~/.ssh/config that users rely on to reach their hosts: Host
// blocks (patterns with * and ?, negation with !) giving HostName, User, Port,
// IdentityFile and ProxyJump (its text: ssh/jump_spec.h reads it). As in OpenSSH, the first value
// found for a keyword wins. Pure: parse text, then look up an alias. Not evaluated: Match blocks
// (their settings are skipped), Include, and % tokens other than %h in HostName.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace dlaunch {

struct SshHostSettings {
  std::string hostname;  // empty: the alias itself
  std::string user;
  std::optional<int> port;
  std::vector<std::string> identity_files;  // in order, ~ not expanded
  std::string proxy_jump;                   // empty: not set; "none": set to no jump host
};

class SshConfig {
 public:
  static SshConfig parse(const std::string& text);
  static SshConfig load(const std::string& path);  // missing file: empty config
  SshHostSettings lookup(const std::string& alias) const;

 private:
  struct Block {
    std::vector<std::string> patterns;
    std::vector<std::pair<std::string, std::string>> settings;  // keyword (lowercase), value
  };
  std::vector<Block> blocks_;
};

bool ssh_pattern_match(const std::string& pattern, const std::string& text);

}  // namespace dlaunch
