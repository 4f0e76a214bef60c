#include "launcher/hang/stack_verdict.h"

#include <algorithm>
#include <map>
#include <string_view>

namespace dlaunch {
namespace {

constexpr std::size_t kNamedAtMost = 8;

std::string where(const RankStack& s) {
  return "rank " + std::to_string(s.rank) + " on " + s.host;
}

// Frames that mean "waiting for the other ranks": torch.distributed's
// collectives (Python names, and c10d's, gloo's and NCCL's native ones), and
// autograd's backward, where DDP's bucketed all-reduce waits.
constexpr std::string_view kCollectiveFrames[] = {
    "all_reduce",     "allreduce",   "all_gather", "allgather",
    "reduce_scatter", "broadcast",   "barrier",    "all_to_all",
    "alltoall",       "c10d",        "gloo::",     "ncclGroup",
    "ncclAll",        "in backward", "::backward", "monitored_barrier",
    "ProcessGroup"};

// The first collective frame in a group's frames, or "" when none.
std::string_view collective_in(const StackGroup& group) {
  for (auto frame : kCollectiveFrames) {
    if (group.frames.find(frame) == std::string::npos) continue;
    // Named as a function: "backward", not "in backward" or "::backward".
    if (frame.starts_with("in ")) frame.remove_prefix(3);
    if (frame.starts_with("::")) frame.remove_prefix(2);
    return frame;
  }
  return {};
}

bool all_answered(const StackGroup& g, const std::map<int, const RankStack*>& by_rank) {
  return std::all_of(g.ranks.begin(), g.ranks.end(),
                     [&by_rank](int r) { return by_rank.at(r)->answered; });
}

}  // namespace

StackVerdict judge_stacks(const std::vector<RankStack>& stacks,
                          const std::vector<StackGroup>& groups) {
  StackVerdict v;
  std::map<int, const RankStack*> by_rank;
  for (const auto& s : stacks) by_rank[s.rank] = &s;
  auto suspect = [&v](const RankStack& s, const std::string& why) {
    if (v.suspects.size() >= kNamedAtMost) return;
    v.suspects.push_back(s.rank);
    v.why.push_back(where(s) + ": " + why);
  };
  for (const auto& s : stacks) {
    if (!s.answered) continue;
    const auto& st = s.report.state;
    if (st == "T" || st == "t") suspect(s, "stopped (state " + st + "): it takes part in nothing");
    if (st == "D")
      suspect(s, "in uninterruptible sleep (state D" +
                     (s.report.wchan.empty() ? "" : ", in " + s.report.wchan) +
                     "): blocked in the kernel, on a disk, a driver or a GPU");
  }
  if (v.suspects.empty()) {
    for (const auto& s : stacks)
      if (s.host_lost) suspect(s, "its host sent no stack (its agent or its link is gone)");
  }
  if (v.suspects.empty() && groups.size() > 1) {
    // The largest group waits together; everyone outside it is suspect, when
    // it is the clear majority (else the stacks merely vary).
    const auto largest = std::max_element(
        groups.begin(), groups.end(),
        [](const StackGroup& a, const StackGroup& b) { return a.ranks.size() < b.ranks.size(); });
    std::size_t total = 0;
    for (const auto& g : groups) total += g.ranks.size();
    if (largest->ranks.size() * 2 > total) {
      for (const auto& g : groups) {
        if (&g == &*largest) continue;
        for (int r : g.ranks)
          if (by_rank[r]->answered)  // one that exited waits in nothing
            suspect(*by_rank[r],
                    "its stack differs from the " + std::to_string(largest->ranks.size()) +
                        " ranks that wait together (ranks " + rank_ranges(largest->ranks) + ")");
      }
    } else {
      // No majority (two ranks, or many small groups): the ranks that wait
      // in a collective wait for those that are in none.
      std::vector<int> waiting;
      std::string_view in;
      for (const auto& g : groups)
        if (const auto frame = collective_in(g); !frame.empty() && all_answered(g, by_rank)) {
          waiting.insert(waiting.end(), g.ranks.begin(), g.ranks.end());
          in = frame;
        }
      std::sort(waiting.begin(), waiting.end());
      if (!waiting.empty()) {
        for (const auto& g : groups) {
          if (!collective_in(g).empty()) continue;
          for (int r : g.ranks)
            if (by_rank[r]->answered)
              suspect(*by_rank[r],
                      "its stack is in no collective, while " + std::to_string(waiting.size()) +
                          (waiting.size() == 1 ? " rank waits" : " ranks wait") + " in one (" +
                          std::string(in) + ": ranks " + rank_ranges(waiting) + ")");
        }
      }
    }
  }
  std::sort(v.suspects.begin(), v.suspects.end());
  return v;
}

std::string format_verdict(const StackVerdict& verdict) {
  if (verdict.why.empty())
    return "no rank stands out: every rank that answered is in the same place (a peer outside "
           "the job, the network, or a deadlock in the program itself)\n";
  std::string out;
  for (const auto& line : verdict.why) out += "suspect: " + line + "\n";
  return out;
}

}  // namespace dlaunch
