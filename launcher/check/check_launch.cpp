#include "launcher/check/check_launch.h"

#include "common/console.h"
#include "common/exit_codes.h"
#include "common/posix.h"
#include "launcher/check/check_runner.h"
#include "launcher/fleet/descriptor_budget.h"
#include "launcher/plan/plan.h"
#include "launcher/transport/agent_binary.h"
#include "launcher/transport/agent_transports.h"
#include "protocol/auth.h"

namespace dlaunch {

Result<CheckResult, int> launch_check(const Options& options, const HostsFile& hosts,
                                      CheckPolicy::Config policy) {
  Options o = options;
  o.command = {"dlaunch-check"};  // the plan wants a program; check agents get none
  const Plan plan = make_plan(o, &hosts, "check");

  const auto agent = find_agent_binary();
  if (!agent) {
    console().error(agent.error());
    return fail(kExitFailure);
  }

  policy.hosts.clear();
  for (const auto& n : plan.nodes) policy.hosts.push_back({n.host.name, n.host.address});
  policy.master_sources.configured = plan.configured_master;
  policy.master_sources.configured_by = plan.configured_master_by;
  policy.master_sources.node0_address = plan.node0_address;
  policy.master_sources.all_nodes_local = plan.all_nodes_local;

  // As for a job: relay processes hold the agents' connections past the limit.
  auto needs = descriptor_needs(plan, o.host_source == HostSource::slurm);
  needs.run = "a check";
  const DescriptorBudget descriptors = descriptor_budget(needs, descriptor_limit());
  if (!descriptors.problem.empty()) {
    console().error(descriptors.problem);
    return fail(kExitFailure);
  }

  asio::io_context io;
  AgentTransports transports =
      make_agent_transports(io, o, o.rdzv_via_ssh || hosts.rendezvous.via_ssh, "dlaunch-check");
  CheckRunner runner(io,
                     {{plan, o, auth::random_bytes(auth::kSecretSize), *agent, descriptors.relays,
                       descriptors.sessions_each()},
                      policy},
                     transports);
  if (auto ran = runner.run(); !ran) return fail(ran.error());
  return runner.result();
}

}  // namespace dlaunch
