// One round of asking the agents for their ranks' stacks: who was asked for
// which ranks, what came back, and when it is complete (every node sent its
// last report, or its connection is gone). Pure.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "launcher/hang/stack_groups.h"
#include "protocol/messages.h"
#include "rendezvous/state.h"

namespace dlaunch {

class StacksGathering {
 public:
  struct Asked {
    ConnId conn = 0;
    std::string host;
    std::vector<int> ranks;  // those it runs that were asked for
  };

  StacksGathering(int id, std::vector<Asked> asked);

  int id() const { return id_; }
  const std::vector<Asked>& asked() const { return asked_; }
  // A report; ignored when it is for another gathering or a rank `conn` was
  // not asked for. True when this completed the gathering.
  bool on_report(ConnId conn, const proto::StacksReport& report);
  // Its connection closed: nothing more will come from it.
  bool on_gone(ConnId conn);
  bool complete() const { return waiting_.empty(); }
  // Every asked rank, in rank order, answered or not.
  std::vector<RankStack> stacks() const;

 private:
  int id_;
  std::vector<Asked> asked_;
  std::set<ConnId> waiting_;
  std::set<ConnId> lost_;
  std::map<ConnId, const Asked*> by_conn_;
  std::map<int, proto::StacksReport> reports_;  // by rank
};

}  // namespace dlaunch
