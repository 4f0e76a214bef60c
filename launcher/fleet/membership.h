// Which hosts run ranks in each round of a job whose hosts may be spares and
// whose node count may range from MIN to MAX (--nnodes MIN:MAX, --spares N,
// `spare = true`). Pure: the policy says which hosts are ready (joined, not
// lost) and which it retires; this says who takes which node rank.
//
// Every host keeps its index in the host list (the node rank its agent was
// started with, the index of the policy's nodes). A round's roster lists, by
// node rank, the host that holds it. The rules:
// - Hosts are taken in preference order: the hosts not marked spare, in
//   host-list order, then the spares.
// - The first round takes the first `max_nodes` ready hosts.
// - Each later round keeps the roster's order. A retired or lost member's
//   place goes to the first ready host not in the roster, so every other node
//   keeps its node rank and its ranks' numbers; a place nobody can take is
//   dropped and the nodes after it move up. Below `max_nodes`, ready hosts
//   are then added at the end.
// - A retired host is never taken again in this job.
// - Fewer than `min_nodes`: no round, and the error names the hosts lost.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "common/result.h"

namespace dlaunch {

class Membership {
 public:
  struct Config {
    std::vector<bool> spare;  // by host index: marked spare (runs no ranks at first)
    std::size_t min_nodes = 1;
    std::size_t max_nodes = 1;
    // Rounds in which a host's ranks failed before it is retired (0: never).
    int node_fail_limit = 2;
  };
  struct Round {
    std::vector<int> roster;           // host index by node rank
    std::vector<std::string> changes;  // one line per change, for the user and the record
  };

  explicit Membership(Config config);

  // The first roster from the hosts that are `ready` (by host index), or the
  // error when fewer than min_nodes are.
  Result<Round> first_round(const std::vector<bool>& ready, const std::vector<std::string>& labels);
  // The next round's roster, from the current one and the hosts ready now.
  Result<Round> next_round(const std::vector<bool>& ready, const std::vector<std::string>& labels);

  // Takes `host` out of this job for good; `why` is said when its place is
  // filled or the job ends for want of it. A second call keeps the first why.
  void retire(int host, std::string why);
  // A round in which `host`'s ranks failed: true when that retires it.
  bool count_failure(int host);

  bool retired(int host) const { return !why_retired_[index(host)].empty(); }
  const std::vector<int>& roster() const { return roster_; }
  // The host's node rank in the current round; -1 when it runs no ranks.
  int node_rank_of(int host) const { return node_rank_of_[index(host)]; }
  bool elastic() const { return elastic_; }
  const Config& config() const { return config_; }

 private:
  std::size_t index(int host) const { return static_cast<std::size_t>(host); }
  bool can_take(int host, const std::vector<bool>& ready) const;
  // The first host in preference order that can take a place, or -1.
  int next_candidate(const std::vector<bool>& ready) const;
  std::string describe_loss(const std::vector<std::string>& labels) const;
  void set_roster(std::vector<int> roster);

  Config config_;
  bool elastic_ = false;  // spares, or a range of node counts
  std::vector<int> preference_;
  std::vector<std::string> why_retired_;  // empty: not retired
  std::vector<int> failures_;
  std::vector<int> roster_;
  std::vector<int> node_rank_of_;
};

}  // namespace dlaunch
