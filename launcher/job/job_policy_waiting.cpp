// JobPolicy, continued: what a job that has not started is waiting for, told
// every kWaitingReport and, at --rdzv-timeout, as the reason it failed
// (job_policy.h).
#include <string>

#include "common/exit_codes.h"
#include "launcher/job/job_policy.h"

namespace dlaunch {

// Names at most `at_most` of the nodes `missing` picks, and how many more.
std::string JobPolicy::names_of(const std::function<bool(std::size_t)>& missing,
                                std::size_t at_most) const {
  std::string names;
  std::size_t count = 0;
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (!missing(i)) continue;
    if (++count <= at_most) names += (names.empty() ? "" : ", ") + nodes_[i].setup.label;
  }
  if (count > at_most) names += " and " + std::to_string(count - at_most) + " more";
  return names;
}

std::string JobPolicy::missing_nodes(std::size_t at_most) const {
  return names_of([this](std::size_t i) { return !nodes_[i].conn.has_value(); }, at_most);
}

std::string JobPolicy::missing_probe_reports(std::size_t at_most) const {
  return names_of([this](std::size_t i) { return probe_ && !probe_->reported(i); }, at_most);
}

std::string JobPolicy::missing_syncs(std::size_t at_most) const {
  return names_of([this](std::size_t i) { return !nodes_[i].synced; }, at_most);
}

// Every node joined and the probe (if any) is answered: only --sync is left.
bool JobPolicy::waiting_for_sync() const {
  return config_.sync && rendezvous_.all_joined() && synced_ < nodes_.size() &&
         (!probe_sent_ || (probe_ && probe_->complete()));
}

void JobPolicy::report_waiting() {
  if (rendezvous_.assigned() || phase_ != Phase::starting) return;
  elapsed_waiting_ += kWaitingReport;
  if (waiting_for_sync()) {
    note("waiting for " + std::to_string(nodes_.size() - synced_) + " nodes to finish " +
         config_.sync_what + ": " + missing_syncs(20));
    emit(job_action::ArmTimer{JobTimer::waiting_report, kWaitingReport});
    return;
  }
  if (probe_sent_ && rendezvous_.all_joined()) {
    note("waiting for " + std::to_string(probe_ ? probe_->reports_missing() : 0) +
         " nodes to report their probe of node 0's addresses: " + missing_probe_reports(20));
    emit(job_action::ArmTimer{JobTimer::waiting_report, kWaitingReport});
    return;
  }
  const auto joined = static_cast<std::size_t>(rendezvous_.joined());
  note("waiting for " + std::to_string(nodes_.size() - joined) + " of " +
       std::to_string(nodes_.size()) + " nodes to join (" +
       std::to_string(elapsed_waiting_.count()) + " s of --rdzv-timeout " +
       std::to_string(config_.rdzv_timeout_s) + " s): " + missing_nodes(20));
  emit(job_action::ArmTimer{JobTimer::waiting_report, kWaitingReport});
}

void JobPolicy::on_rendezvous_timeout() {
  if (rendezvous_.assigned() || phase_ != Phase::starting) return;
  if (waiting_for_sync()) {
    fail(kExitFailure,
         "timed out after " + std::to_string(config_.rdzv_timeout_s) + " s waiting for " +
             config_.sync_what + " to finish on: " + missing_syncs(50) +
             " (the sync counts within --rdzv-timeout; raise it for a large first copy)",
         -1, {});
    return;
  }
  if (probe_sent_ && rendezvous_.all_joined()) {
    fail(kExitFailure,
         "timed out after " + std::to_string(config_.rdzv_timeout_s) +
             " s waiting for the probe of node 0's addresses from: " + missing_probe_reports(50),
         -1, {});
    return;
  }
  const std::string hint =
      " (raise --rdzv-timeout, or check that they can reach the rendezvous port" + jump_host_hint();
  fail(kExitFailure,
       "timed out after " + std::to_string(config_.rdzv_timeout_s) +
           " s waiting for nodes to join: " + missing_nodes(50) + hint + ")",
       -1, {});
}

std::string JobPolicy::jump_host_hint() const {
  const std::string behind_jump = names_of(
      [this](std::size_t i) { return nodes_[i].setup.behind_jump && !nodes_[i].conn; }, 50);
  if (behind_jump.empty()) return "";
  return "; " + behind_jump +
         " reached through a jump host: a network that lets only SSH in needs via = \"ssh\" "
         "under [rendezvous] in the hosts file, or --rdzv-via-ssh";
}

}  // namespace dlaunch
