// Which rank a hung job waits for, from every rank's stack and state: the
// verdict dlaunch prints when a job stalls, and that `dlaunch stacks` ends
// with. The rules, strongest first:
//   1. a rank stopped (T) or in uninterruptible sleep (D): it cannot take part
//      in any collective;
//   2. a rank whose host sent no stacks (its agent or link is gone);
//   3. ranks whose stack differs from the one most ranks share: they are not
//      in the collective the others wait in; where no stack is most ranks'
//      (two ranks), the ranks in no collective while others wait in one;
//   4. otherwise no rank stands out (every rank waits in the same place: a
//      peer outside the job, the network, or a deadlock in the program).
// Pure.
#pragma once

#include <string>
#include <vector>

#include "launcher/hang/stack_groups.h"

namespace dlaunch {

struct StackVerdict {
  std::vector<int> suspects;     // ranks, ascending
  std::vector<std::string> why;  // one line per reason, naming rank and host
};

StackVerdict judge_stacks(const std::vector<RankStack>& stacks,
                          const std::vector<StackGroup>& groups);

// The block printed: "suspect: rank 5 on node-b: stopped (state T)" lines, or
// "no rank stands out: ...".
std::string format_verdict(const StackVerdict& verdict);

}  // namespace dlaunch
