// A rank in a container whose program could not be started: the engine's
// init (podman's catatonit, docker's tini) says "failed to exec pid1: REASON"
// (or tini's "exec PROGRAM failed: REASON") and exits 1, where a rank
// outside a container exits 127 with `cannot run PROGRAM`. Told from the
// rank's last lines, so that the job says so and exits as a shell would.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace dlaunch {

// The init's reason ("No such file or directory") when `last_lines` end with
// its exec failure; nothing otherwise.
std::optional<std::string> container_start_failure(const std::vector<std::string>& last_lines);

}  // namespace dlaunch
