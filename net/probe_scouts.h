// The MASTER_ADDR probe's scouts on a big job (net/probe_rounds.h): a
// few nodes spread evenly over the node list, node 0 and the last node among
// them, try every candidate before the others try only the scouts' choice.
// Agents know them too: a scout skips the first-connect jitter, so the first
// round can run, and the others be asked, while the fleet is still arriving.
#pragma once

#include <cstddef>
#include <vector>

namespace dlaunch::net {

inline constexpr std::size_t kProbeScouts = 64;
// Below this many nodes every node tries every candidate: there are no scouts.
inline constexpr std::size_t kProbeRoundsFromNodes = 256;

// The scouts of a job of `nodes`, ascending; none below kProbeRoundsFromNodes.
std::vector<std::size_t> probe_scouts(std::size_t nodes);
bool is_probe_scout(std::size_t node, std::size_t nodes);

}  // namespace dlaunch::net
