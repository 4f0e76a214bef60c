// JobPolicy, continued: the MASTER_ADDR probe and the choice of the address
// and NICs the ranks use (job_policy.h).
#include <algorithm>
#include <utility>

#include "common/exit_codes.h"
#include "launcher/job/job_policy.h"

namespace dlaunch {

using agent_link::log_line;

// Every node tries node 0's candidate addresses at node 0's probe port; the
// ranks start only once one address is known to work from everywhere. The
// probe starts once node 0 has joined (its addresses and probe port are known)
// and asks each node as it joins, so on a big job it runs while the last nodes
// arrive. Without a probe port or a candidate there is nothing to try: the
// choice then waits for every node (their interfaces name each one's NIC).
void JobPolicy::start_probe() {
  Node& node0 = nodes_[static_cast<std::size_t>(master_host())];
  if (!node0.conn) return;
  // After a round, each agent listens on the port its AgentDone named.
  if (const auto* member = rendezvous_.member(*node0.conn); member && rendezvous_.started())
    node0.probe_port = member->master_port;
  config_.master_sources.node0_interfaces = node0.interfaces;
  if (elastic() && !node0.setup.address.empty())
    config_.master_sources.node0_address = node0.setup.address;
  candidates_ = net::master_candidates(config_.master_sources);
  if ((node0.probe_port == 0 || candidates_.empty()) && !rendezvous_.all_joined() && !elastic())
    return;
  probe_sent_ = true;
  if (node0.probe_port == 0) {
    emit(log_line(log::Level::warn, "node 0 (", node0.setup.label,
                  ") could not open a probe port; MASTER_ADDR=", rendezvous_.master_addr(),
                  " is used untested"));
    // An elastic job's node 0 may have changed hands: its own address then.
    const bool own = elastic() && !node0.setup.address.empty();
    network_.emplace(own ? node0.setup.address : rendezvous_.master_addr(),
                     std::vector<std::string>{});
    network_chosen();
    return;
  }
  emit(log_line(log::Level::debug, "probing ", candidates_.size(),
                " candidate MASTER_ADDRs of node 0 from every node at port ", node0.probe_port));
  if (candidates_.empty()) {
    choose_master();
    return;
  }
  probe_.emplace(candidates_, node0.probe_port, config_.probe_timeout_ms, nodes_.size());
  // An elastic job probes from the roster's nodes only: spares and lost hosts
  // count as gone, so the probe does not wait for them.
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    const bool member = !elastic() || rendezvous_.node_rank_of(static_cast<int>(i)) >= 0;
    if (member && nodes_[i].conn) {
      probe_->on_joined(i);
    } else if (elastic()) {
      probe_->on_lost(i);
    }
  }
  apply_probe_reply(probe_->start());
}

void JobPolicy::send_probes(const std::vector<MasterProbe::Send>& sends) {
  for (const auto& send : sends) {
    if (const auto& conn = nodes_[send.node].conn) emit(job_action::Send{*conn, send.probe});
  }
}

void JobPolicy::apply_probe_reply(MasterProbe::Reply reply) {
  for (auto& n : reply.notes) emit(job_action::Log{n.level, std::move(n.text)});
  if (reply.unreachable) {
    fail(kExitFailure, *reply.unreachable, -1, {});
    return;
  }
  send_probes(reply.sends);
  if (probe_->complete()) choose_master();
}

JobActions JobPolicy::on_probe_report(ConnId conn, const proto::ProbeReport& report) {
  const auto index = node_of(conn);
  if (finished_ || !index || !probe_ || probe_->complete() ||
      (!reprobing_ && (rendezvous_.assigned() || phase_ != Phase::starting)))
    return {};
  const auto node = static_cast<std::size_t>(*index);
  apply_probe_reply(probe_->on_report(node, nodes_[node].setup.label, report.outcomes));
  return take();
}

void JobPolicy::choose_master() {
  // An elastic job keeps its hosts' interfaces for the probes of later
  // rounds; a fixed one needs them no more (thousands of nodes: moved).
  std::vector<std::string> labels;
  std::vector<net::Interfaces> interfaces;
  for (auto& n : nodes_) {
    labels.push_back(n.setup.label);
    interfaces.push_back(elastic() ? n.interfaces : std::move(n.interfaces));
  }
  std::vector<net::NodeProbe> probes =
      node_probes(probe_, std::move(labels), std::move(interfaces));
  // The roster's nodes, in node-rank order: the choice is theirs to make.
  const auto& roster = rendezvous_.roster();
  if (elastic()) {
    std::vector<net::NodeProbe> members;
    for (int host : roster) members.push_back(std::move(probes[static_cast<std::size_t>(host)]));
    probes = std::move(members);
  }
  const auto result = net::choose_master(candidates_, config_.master_sources, probes);
  if (!result.choice) {
    reprobing_ = false;
    fail(kExitFailure, result.report, -1, {});
    return;
  }
  emit(log_line(log::Level::info, result.report));
  for (const auto& w : result.choice->warnings) emit(log_line(log::Level::warn, w));
  std::vector<std::string> interface_by_host = result.choice->interface_by_node;
  if (elastic()) {
    interface_by_host.assign(nodes_.size(), "");
    for (std::size_t rank = 0;
         rank < roster.size() && rank < result.choice->interface_by_node.size(); ++rank)
      interface_by_host[static_cast<std::size_t>(roster[rank])] =
          result.choice->interface_by_node[rank];
  }
  network_.emplace(result.choice->address, std::move(interface_by_host));
  probed_roster_ = roster;
  network_chosen();
}

void JobPolicy::network_chosen() {
  if (!reprobing_) {
    maybe_assign();
    return;
  }
  reprobing_ = false;
  rendezvous_.set_network(network_->first, network_->second);
  send_round();
}

}  // namespace dlaunch
