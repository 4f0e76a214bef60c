#include "launcher/check/pair_schedule.h"

#include <algorithm>
#include <set>

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

bool samples_pairs(MatrixPairs choice, int hosts) {
  return choice == MatrixPairs::sampled ||
         (choice == MatrixPairs::automatic && hosts > kAllPairsUpTo);
}

std::vector<int> sampled_strides(int n) {
  std::vector<int> strides;
  for (int s = 1; s <= n / 2; s *= 2) strides.push_back(s);
  return strides;
}

std::vector<std::pair<int, int>> sampled_pairs(int n) {
  std::vector<std::pair<int, int>> pairs;
  // Stride s pairs hosts s apart around the list, and no other stride does
  // (s <= n/2): each pair comes once, except that half the list away (s = n/2)
  // the second half of the hosts meets the first half again.
  for (int s : sampled_strides(n)) {
    const int hosts = 2 * s == n ? s : n;
    for (int i = 0; i < hosts; ++i) {
      const int j = (i + s) % n;
      const auto [a, b] = std::minmax(i, j);
      pairs.emplace_back(a, b);
    }
  }
  return pairs;
}

std::vector<PairRound> disjoint_rounds(const std::vector<std::pair<int, int>>& pairs) {
  std::vector<PairRound> rounds;
  std::vector<std::set<int>> busy;  // per round, its hosts
  for (const auto& [a, b] : pairs) {
    std::size_t r = 0;
    while (r < rounds.size() && (busy[r].contains(a) || busy[r].contains(b))) ++r;
    if (r == rounds.size()) {
      rounds.emplace_back();
      busy.emplace_back();
    }
    rounds[r].emplace_back(a, b);
    busy[r].insert(a);
    busy[r].insert(b);
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
