#include "launcher/check/pair_schedule.h"

#include <algorithm>

namespace dlaunch {

std::vector<PairRound> pair_rounds(const std::vector<int>& nodes) {
  std::vector<PairRound> rounds;
  if (nodes.size() < 2) return rounds;
  // Positions 0..m-1 with m even; position m-1 of an odd count is the bye.
  const std::size_t n = nodes.size();
  const std::size_t m = n % 2 == 0 ? n : n + 1;
  std::vector<std::size_t> at(m);
  for (std::size_t i = 0; i < m; ++i) at[i] = i;
  for (std::size_t r = 0; r + 1 < m; ++r) {
    PairRound round;
    for (std::size_t i = 0; i < m / 2; ++i) {
      std::size_t a = at[i], b = at[m - 1 - i];
      if (a >= n || b >= n) continue;  // the bye
      if (a > b) std::swap(a, b);
      round.emplace_back(nodes[a], nodes[b]);
    }
    rounds.push_back(std::move(round));
    // Keep the first position, rotate the others by one.
    std::rotate(at.begin() + 1, at.end() - 1, at.end());
  }
  return rounds;
}

std::chrono::milliseconds round_duration(std::size_t rounds, std::chrono::milliseconds budget,
                                         std::chrono::milliseconds shortest,
                                         std::chrono::milliseconds longest) {
  if (rounds == 0) return longest;
  const auto each = budget / static_cast<std::int64_t>(rounds);
  return std::clamp(each, shortest, longest);
}

}  // namespace dlaunch
