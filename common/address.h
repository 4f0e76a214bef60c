// The one loopback check: which spellings of an address mean this machine.
#pragma once

#include <string_view>

namespace dlaunch {

// True for "localhost" (any case), "127.0.0.1" and "::1". Other 127/8
// addresses and other spellings ("127.1", "::ffff:127.0.0.1") are not: a host
// written that way is reached as written, so an sshd listening on another
// loopback address stays reachable through SSH.
bool is_loopback_address(std::string_view address);

}  // namespace dlaunch
