#include "launcher/cli/worker_node.h"

#include <unistd.h>

#include <ctime>
#include <utility>

#include "agent/agent.h"
#include "agent/guardian.h"
#include "common/log.h"
#include "common/posix.h"
#include "launcher/cli/job_claim_report.h"
#include "launcher/plan/launch_spec_builder.h"
#include "launcher/record/job_record.h"
#include "launcher/transport/agent_address.h"

namespace dlaunch {
namespace {

int run_manual_worker(const Plan& plan, const Options& o, std::string secret) {
  LaunchContext context;
  context.secret = std::move(secret);
  context.rdzv_host = address_for_agents(plan.rdzv_connect);
  context.rdzv_port = static_cast<std::uint16_t>(plan.rdzv_port);
  context.local_workdir = current_directory();
  LaunchSpec spec = make_launch_spec(plan, plan.nodes.front(), o, context);
  const auto silence_limit = worker_silence_limit(spec.heartbeat_timeout_s);
  return run_guarded([&spec](int pulse_fd) { return run_agent(std::move(spec), -1, pulse_fd); },
                     silence_limit);
}

// "node3", or "node-<this host>" while the rendezvous has not yet given a rank.
std::string node_word(const std::string& host, const Options& o) {
  return o.node_rank >= 0 ? "node" + std::to_string(o.node_rank) : "node-" + host;
}

}  // namespace

int run_worker_node(const Plan& plan, const Options& o, std::string secret, Detacher& detacher) {
  const std::string host = plan.nodes.front().host.name;  // this machine's
  const std::string word = node_word(host, o);
  JobInfo info = new_job_info(plan, o);
  // This node's own: it runs from start to end, whatever node 0's job does.
  info.status = JobStatus::running;
  info.node_of_job = plan.job;
  info.node_name = word;
  info.node0 = plan.rdzv_connect + ":" + std::to_string(plan.rdzv_port);
  info.hosts = {host};
  NodeRecord self;
  self.host = host;
  self.node_rank = o.node_rank;
  self.ranks = plan.nodes.front().nproc;
  self.agent_pid = ::getpid();
  self.state = "running";
  info.nodes = {self};
  // A given node rank is this node's for good: a finished record of it is
  // moved aside, as a named job's. A rank the rendezvous gives lets two such
  // nodes share a machine: the second, while the first runs, gets -2, -3, ...
  auto claimed = claim_or_report(o, plan.job + "." + word,
                                 o.node_rank >= 0 ? NameRule::exact : NameRule::exact_unless_active,
                                 std::move(info));
  if (!claimed) {
    detacher.failed(claimed.error());
    return claimed.error();
  }
  detacher.started(claimed->name, claimed->dir + "/coordinator.log");
  const int code = run_manual_worker(plan, o, std::move(secret));

  JobInfo& record = claimed->record;
  JobResult result;
  result.exit_code = code;
  result.finished = std::time(nullptr);
  // `dlaunch stop`, Ctrl-C: what the guardian passed on to the agent.
  result.interrupted = guardian_forwarded_signal() != 0;
  record.status = final_status(result);
  record.nodes.front().state = code == 0 ? "done" : "failed";
  if (auto written = write_job_record(claimed->dir, record, &result); !written)
    log::warn(written.error());
  return code;
}

}  // namespace dlaunch
