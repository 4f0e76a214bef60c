// The stacks of many ranks, made readable: ranks whose stacks are the same
// collapse into one group, and the smallest groups come first, since in a hung
// collective the odd one out is the suspect (as ByteRobust groups the stacks
// of thousands of processes). Pure: what the agents reported goes in, text
// comes out.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "protocol/messages.h"

namespace dlaunch {

// One rank's report with where it ran. `answered` false: no report for it,
// either because it had exited (its host answered without it) or because its
// host never answered (`host_lost`: its agent or link is gone, or too slow).
struct RankStack {
  int rank = 0;
  std::string host;
  bool answered = false;
  bool host_lost = false;
  proto::StacksReport report;
};

// What makes two stacks "the same": the frames only, with what differs
// between processes of one program taken out (addresses, thread and process
// ids), the threads in a fixed order. A faulthandler dump, py-spy's, gdb's and
// eu-stack's all reduce to their frame lines.
std::string stack_signature(std::string_view dump);

struct StackGroup {
  std::vector<int> ranks;  // ascending
  std::string state;       // the ranks' states, "S" or "S, R" when they differ
  std::string frames;      // the signature: what the group shares
};

// Smallest group first; ties by their first rank. Ranks without a report
// form a group of their own with no frames.
std::vector<StackGroup> group_stacks(const std::vector<RankStack>& stacks);

// "0-6,8-15": ranks as ranges.
std::string rank_ranges(const std::vector<int>& ranks);

// The groups as `dlaunch stacks` prints them:
//   ranks 0-6,8-15 (15 ranks), state S:
//     File "train.py", line 12 in step
//     ...
std::string format_groups(const std::vector<StackGroup>& groups);

}  // namespace dlaunch
