// The order of `dlaunch check`'s pairwise tests: rounds of disjoint pairs (the
// circle method of a round-robin tournament), so every host takes part in at
// most one test per round and each pair is tested exactly once, both
// directions at the same time. n hosts take n-1 rounds (n when n is odd).
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

// How long each round's bulk transfer lasts: the whole matrix within about
// `budget`, but no round shorter than `shortest` (TCP needs a few hundred
// milliseconds to leave slow start on a long link) or longer than `longest`.
std::chrono::milliseconds round_duration(std::size_t rounds, std::chrono::milliseconds budget,
                                         std::chrono::milliseconds shortest,
                                         std::chrono::milliseconds longest);

}  // namespace dlaunch
