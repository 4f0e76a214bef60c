// Which rank lines reach the terminal (the rank logs always get every byte):
// --ranks-filter by global rank, torchrun's --local-ranks-filter by local
// rank, and torchrun's -r/--redirects, which keeps streams off the terminal.
#pragma once

#include <map>
#include <set>

#include "protocol/messages.h"

namespace dlaunch {

struct TerminalFilter {
  std::set<int> ranks = {};        // empty: every rank
  std::set<int> local_ranks = {};  // empty: every local rank
  // Streams kept off the terminal: 1 stdout, 2 stderr, 3 both.
  int hidden_streams = 0;                                // for every local rank
  std::map<int, int> hidden_streams_by_local_rank = {};  // for these, instead

  bool shows(int rank, int local_rank, proto::Stream stream) const;
};

}  // namespace dlaunch
