#include "launcher/fleet/membership.h"

#include <algorithm>
#include <utility>

namespace dlaunch {

Membership::Membership(Config config)
    : config_(std::move(config)),
      why_retired_(config_.spare.size()),
      failures_(config_.spare.size(), 0),
      node_rank_of_(config_.spare.size(), -1) {
  const auto hosts = config_.spare.size();
  config_.max_nodes = std::min(config_.max_nodes, hosts);
  config_.min_nodes = std::min(config_.min_nodes, config_.max_nodes);
  // The plan says the same before the job starts (launcher/plan/plan.cpp elastic()).
  elastic_ = config_.min_nodes < config_.max_nodes ||
             std::find(config_.spare.begin(), config_.spare.end(), true) != config_.spare.end() ||
             config_.max_nodes < hosts;
  for (int pass = 0; pass < 2; ++pass) {
    for (std::size_t i = 0; i < hosts; ++i) {
      if (config_.spare[i] == (pass == 1)) preference_.push_back(static_cast<int>(i));
    }
  }
}

bool Membership::can_take(int host, const std::vector<bool>& ready) const {
  return ready[index(host)] && !retired(host) && node_rank_of_[index(host)] < 0;
}

int Membership::next_candidate(const std::vector<bool>& ready) const {
  for (int host : preference_) {
    if (can_take(host, ready)) return host;
  }
  return -1;
}

void Membership::set_roster(std::vector<int> roster) {
  for (int host : roster_) node_rank_of_[index(host)] = -1;
  roster_ = std::move(roster);
  for (std::size_t rank = 0; rank < roster_.size(); ++rank)
    node_rank_of_[index(roster_[rank])] = static_cast<int>(rank);
}

Result<Membership::Round> Membership::first_round(const std::vector<bool>& ready,
                                                  const std::vector<std::string>& labels) {
  set_roster({});
  std::vector<int> roster;
  for (int host : preference_) {
    if (roster.size() == config_.max_nodes) break;
    if (can_take(host, ready)) roster.push_back(host);
  }
  if (roster.size() < config_.min_nodes) {
    return fail(std::to_string(roster.size()) + " of the " + std::to_string(config_.min_nodes) +
                " nodes needed joined" + describe_loss(labels));
  }
  Round round;
  for (std::size_t rank = 0; rank < roster.size(); ++rank) {
    if (config_.spare[index(roster[rank])])
      round.changes.push_back("spare " + labels[index(roster[rank])] + " takes node " +
                              std::to_string(rank) + " from the start");
  }
  set_roster(roster);
  round.roster = roster_;
  return round;
}

Result<Membership::Round> Membership::next_round(const std::vector<bool>& ready,
                                                 const std::vector<std::string>& labels) {
  std::vector<int> kept = roster_;
  // Members that cannot go on leave for good: a host that comes back is not
  // taken again (its GPU or link failed once; trusting it costs a round).
  for (int host : kept) {
    if (!ready[index(host)]) retire(host, "lost");
  }
  set_roster({});
  Round round;
  std::vector<int> roster;
  // Mark the survivors first, so a replacement is never one of them.
  for (int host : kept) {
    if (!retired(host)) node_rank_of_[index(host)] = 0;
  }
  for (int host : kept) {
    if (!retired(host)) {
      roster.push_back(host);
      continue;
    }
    const int spare = next_candidate(ready);
    const std::string lost = labels[index(host)] + " (" + why_retired_[index(host)] + ")";
    if (spare < 0) {
      round.changes.push_back("node " + std::to_string(roster.size()) + " of " + lost +
                              " is dropped: no spare is left");
      continue;
    }
    node_rank_of_[index(spare)] = 0;
    round.changes.push_back(labels[index(spare)] + " takes node " + std::to_string(roster.size()) +
                            " of " + lost);
    roster.push_back(spare);
  }
  while (roster.size() < config_.max_nodes) {
    const int extra = next_candidate(ready);
    if (extra < 0) break;
    node_rank_of_[index(extra)] = 0;
    round.changes.push_back(labels[index(extra)] + " joins as node " +
                            std::to_string(roster.size()));
    roster.push_back(extra);
  }
  for (int host : roster) node_rank_of_[index(host)] = -1;
  if (roster.size() < config_.min_nodes) {
    return fail(std::to_string(roster.size()) + " nodes are left, fewer than the " +
                std::to_string(config_.min_nodes) + " the job needs" + describe_loss(labels));
  }
  set_roster(roster);
  round.roster = roster_;
  return round;
}

std::string Membership::describe_loss(const std::vector<std::string>& labels) const {
  std::string lost;
  for (std::size_t i = 0; i < why_retired_.size(); ++i) {
    if (why_retired_[i].empty()) continue;
    lost += (lost.empty() ? "" : ", ") + labels[i] + " (" + why_retired_[i] + ")";
  }
  return lost.empty() ? "" : "; retired: " + lost;
}

void Membership::retire(int host, std::string why) {
  auto& slot = why_retired_[index(host)];
  if (slot.empty()) slot = why.empty() ? "retired" : std::move(why);
}

bool Membership::count_failure(int host) {
  if (retired(host)) return true;
  if (config_.node_fail_limit <= 0 || ++failures_[index(host)] < config_.node_fail_limit)
    return false;
  retire(host, "its ranks failed in " + std::to_string(failures_[index(host)]) + " rounds");
  return true;
}

}  // namespace dlaunch
