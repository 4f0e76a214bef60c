// Host names to addresses without NSS. The agent is one static binary that
// runs on any libc, so it cannot load the host's NSS modules (what
// getaddrinfo and getpwuid use). The coordinator resolves the names it sends
// to agents; what still reaches an agent as a name is looked up here: a
// numeric address is taken as it is, else the name's entries in /etc/hosts.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace dlaunch {

// The addresses `hosts_text` (in /etc/hosts' format) gives `name`, in file
// order; `name` itself when it is a numeric IPv4 or IPv6 address.
std::vector<std::string> lookup_in_hosts_text(std::string_view name, std::string_view hosts_text);

// The same against this machine's /etc/hosts.
std::vector<std::string> lookup_without_nss(std::string_view name);

// Why `name` gave no address here, for an error message.
std::string lookup_failure(std::string_view name);

// True for a numeric IPv4 or IPv6 address.
bool is_numeric_address(std::string_view text);

// The home directory of `uid` in `passwd_text` (/etc/passwd's format); empty
// when no line has it.
std::string home_from_passwd_text(unsigned uid, std::string_view passwd_text);

// The same against this machine's /etc/passwd, read directly (no NSS).
std::string home_from_passwd(unsigned uid);

}  // namespace dlaunch
