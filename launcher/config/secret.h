// The job's shared secret. dlaunch makes a fresh 256-bit one per job when it
// starts the agents itself; in manual mode every node reads the same file.
#pragma once

#include <optional>
#include <string>

namespace dlaunch {

// Reads a secret file (trailing whitespace dropped). Returns nullopt and sets
// `error` when it is missing, unreadable or empty; sets `warning` when others
// can read it.
std::optional<std::string> read_secret_file(const std::string& path, std::string* error,
                                            std::string* warning);

}  // namespace dlaunch
