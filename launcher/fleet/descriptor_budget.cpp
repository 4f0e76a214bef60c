#include "launcher/fleet/descriptor_budget.h"

#include <algorithm>

#include "common/text.h"

namespace dlaunch {

DescriptorNeeds descriptor_needs(const Plan& plan, bool srun) {
  DescriptorNeeds needs;
  needs.nnodes = static_cast<std::size_t>(plan.nnodes);
  for (const auto& n : plan.nodes) {
    if (n.local) {
      ++needs.local_agents;
    } else if (!srun) {
      ++needs.ssh_hosts;
    }
  }
  if (srun) ++needs.local_agents;
  return needs;
}

DescriptorBudget descriptor_budget(const DescriptorNeeds& needs, std::size_t limit) {
  DescriptorBudget b;
  b.nnodes = needs.nnodes;
  const std::size_t unrelayed = needs.ssh_hosts + 3 * needs.local_agents + kOwnDescriptors;
  b.needed = needs.nnodes + unrelayed;
  if (b.needed + kMinRankLogFiles > limit && limit > kRelayOwnDescriptors) {
    b.sessions_per_relay = limit - kRelayOwnDescriptors;
    b.relays = (needs.nnodes + kRelayMargin + b.sessions_per_relay - 1) / b.sessions_per_relay;
    b.needed = unrelayed + b.relays;
  }
  if (b.needed + kMinRankLogFiles > limit) {
    b.problem = needs.run + " of " + grouped(needs.nnodes) + " nodes needs about " +
                grouped(b.needed + kMinRankLogFiles) + " open files on this machine (" +
                (b.relays > 0 ? "" : "one connection per agent, ") +
                (needs.ssh_hosts > 0 ? "one SSH session per host, " : "") +
                "dlaunch's own and a few rank logs), but this process may open " + grouped(limit) +
                ": raise the hard limit (`ulimit -Hn`; LimitNOFILE= in a systemd unit, nofile in "
                "/etc/security/limits.conf) or run fewer nodes";
    return b;
  }
  if (b.relays == 0)
    b.handshake_room = std::min(kHandshakeRoom, (limit - b.needed - kMinRankLogFiles) / 2);
  b.rank_log_files = std::min<std::size_t>(limit - b.needed - b.handshake_room, 65'536);
  return b;
}

}  // namespace dlaunch
