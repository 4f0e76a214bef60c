#include "net/probe_scouts.h"

namespace dlaunch::net {

namespace {
// Scout k of nodes: spread evenly, the first node 0 and the last node - 1.
std::size_t scout(std::size_t k, std::size_t nodes) {
  return k * (nodes - 1) / (kProbeScouts - 1);
}
}  // namespace

std::vector<std::size_t> probe_scouts(std::size_t nodes) {
  std::vector<std::size_t> out;
  if (nodes < kProbeRoundsFromNodes) return out;
  for (std::size_t k = 0; k < kProbeScouts; ++k) out.push_back(scout(k, nodes));
  return out;
}

bool is_probe_scout(std::size_t node, std::size_t nodes) {
  if (nodes < kProbeRoundsFromNodes || node >= nodes) return false;
  // The nodes between two scouts number more than kProbeScouts, so at most
  // one k lands on `node`: the smallest whose scout is not below it.
  const std::size_t k = (node * (kProbeScouts - 1) + nodes - 2) / (nodes - 1);
  return k < kProbeScouts && scout(k, nodes) == node;
}

}  // namespace dlaunch::net
