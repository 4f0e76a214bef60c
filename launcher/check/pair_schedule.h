// The order of `dlaunch check`'s pairwise tests: rounds of disjoint pairs (the
// circle method of a round-robin tournament), so every host takes part in at
// most one test per round and each pair is tested exactly once, both
// directions at the same time. n hosts take n-1 rounds (n when n is odd).
// Past kAllPairsUpTo hosts, a sample of the pairs instead (sampled_pairs).
// Pure.
#pragma once

#include <chrono>
#include <utility>
#include <vector>

namespace dlaunch {

using PairRound = std::vector<std::pair<int, int>>;

// Rounds over `nodes` (node ranks, any order); a pair is (earlier, later) in
// the order given.
std::vector<PairRound> pair_rounds(const std::vector<int>& nodes);

// Up to this many hosts `dlaunch check` tests every pair (--matrix-pairs auto):
// 63 rounds, about 16 s at the shortest round. Past it every pair would take
// n-1 rounds (half an hour at 2,000 hosts) and n(n-1) results.
inline constexpr int kAllPairsUpTo = 64;

// --matrix-pairs: every pair, a sample, or every pair up to kAllPairsUpTo.
enum class MatrixPairs { automatic, all, sampled };
bool samples_pairs(MatrixPairs choice, int hosts);

// The sampled matrix of n hosts (node ranks 0..n-1): each host paired with
// the hosts 1, 2, 4, 8, ... places after it in the hosts file, wrapping
// around, up to half the list: about log2(n) strides, so each host meets
// about 2*log2(n) others, its neighbours (often its rack) and hosts far down
// the list (other racks, other regions). Each pair once, as (lower, higher).
std::vector<std::pair<int, int>> sampled_pairs(int n);
// The strides sampled_pairs uses, for the report.
std::vector<int> sampled_strides(int n);

// `pairs` in rounds of disjoint pairs, each pair in the first round where
// neither of its hosts is busy yet: at most 2d-1 rounds when no host is in
// more than d pairs (about 4*log2(n) for the sampled matrix).
std::vector<PairRound> disjoint_rounds(const std::vector<std::pair<int, int>>& pairs);

// How long each round's bulk transfer lasts: the whole matrix within about
// `budget`, but no round shorter than `shortest` (TCP needs a few hundred
// milliseconds to leave slow start on a long link) or longer than `longest`.
std::chrono::milliseconds round_duration(std::size_t rounds, std::chrono::milliseconds budget,
                                         std::chrono::milliseconds shortest,
                                         std::chrono::milliseconds longest);

}  // namespace dlaunch
