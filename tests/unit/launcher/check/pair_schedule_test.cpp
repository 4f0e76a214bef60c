#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <set>

#include "launcher/check/pair_schedule.h"

using namespace dlaunch;

namespace {
// Every pair exactly once, no host twice in a round.
void check_schedule(const std::vector<int>& nodes) {
  const auto rounds = pair_rounds(nodes);
  std::set<std::pair<int, int>> seen;
  for (const auto& round : rounds) {
    std::set<int> busy;
    for (const auto& [a, b] : round) {
      CHECK(a != b);
      CHECK(busy.insert(a).second);
      CHECK(busy.insert(b).second);
      CHECK(seen.insert({std::min(a, b), std::max(a, b)}).second);
    }
  }
  const std::size_t n = nodes.size();
  CHECK(seen.size() == n * (n - 1) / 2);
  if (n >= 2) CHECK(rounds.size() == (n % 2 == 0 ? n - 1 : n));
}
}  // namespace

TEST_CASE("pair rounds cover every pair once, each host once per round") {
  for (int n = 0; n <= 17; ++n) {
    std::vector<int> nodes;
    for (int i = 0; i < n; ++i) nodes.push_back(i * 3 + 1);  // any node ranks
    check_schedule(nodes);
  }
  CHECK(pair_rounds({4, 9}) == std::vector<PairRound>{{{4, 9}}});
}

TEST_CASE("round duration spreads the budget within bounds") {
  using ms = std::chrono::milliseconds;
  CHECK(round_duration(3, ms(6000), ms(250), ms(1000)) == ms(1000));
  CHECK(round_duration(7, ms(6000), ms(250), ms(1000)) == ms(857));
  CHECK(round_duration(99, ms(6000), ms(250), ms(1000)) == ms(250));
  CHECK(round_duration(0, ms(6000), ms(250), ms(1000)) == ms(1000));
}

TEST_CASE("the sampled matrix: strides 1, 2, 4, ... up to half the list, each pair once") {
  CHECK(sampled_strides(2) == std::vector<int>{1});
  CHECK(sampled_strides(65) == std::vector<int>{1, 2, 4, 8, 16, 32});
  CHECK(sampled_strides(2000) == std::vector<int>{1, 2, 4, 8, 16, 32, 64, 128, 256, 512});
  for (int n : {2, 3, 4, 5, 8, 17, 65, 100, 1000, 2048}) {
    CAPTURE(n);
    const auto pairs = sampled_pairs(n);
    std::set<std::pair<int, int>> seen;
    std::vector<std::set<int>> partners(static_cast<std::size_t>(n));
    for (const auto& [a, b] : pairs) {
      CHECK(a < b);
      CHECK(b < n);
      CHECK(seen.insert({a, b}).second);
      partners[static_cast<std::size_t>(a)].insert(b);
      partners[static_cast<std::size_t>(b)].insert(a);
    }
    // Each host meets the hosts each stride before and after it.
    for (int i = 0; i < n; ++i) {
      for (int s : sampled_strides(n)) {
        CHECK(partners[static_cast<std::size_t>(i)].count((i + s) % n) == 1);
        CHECK(partners[static_cast<std::size_t>(i)].count((i - s + n) % n) == 1);
      }
    }
  }
  // Small lists: the sample is every pair.
  CHECK(sampled_pairs(4).size() == 6);
}

TEST_CASE("disjoint rounds keep every pair once, no host twice in a round, at most 2d-1 rounds") {
  for (int n : {5, 64, 65, 1000}) {
    CAPTURE(n);
    const auto pairs = sampled_pairs(n);
    const auto rounds = disjoint_rounds(pairs);
    std::set<std::pair<int, int>> seen;
    for (const auto& round : rounds) {
      std::set<int> busy;
      for (const auto& [a, b] : round) {
        CHECK(busy.insert(a).second);
        CHECK(busy.insert(b).second);
        CHECK(seen.insert({a, b}).second);
      }
    }
    CHECK(seen.size() == pairs.size());
    std::map<int, int> degree;
    for (const auto& [a, b] : pairs) ++degree[a], ++degree[b];
    int d = 0;
    for (const auto& [host, k] : degree) d = std::max(d, k);
    CHECK(rounds.size() <= static_cast<std::size_t>(2 * d - 1));
  }
}

TEST_CASE("--matrix-pairs auto: every pair up to 64 hosts, a sample past it") {
  CHECK_FALSE(samples_pairs(MatrixPairs::automatic, kAllPairsUpTo));
  CHECK(samples_pairs(MatrixPairs::automatic, kAllPairsUpTo + 1));
  CHECK_FALSE(samples_pairs(MatrixPairs::all, 5000));
  CHECK(samples_pairs(MatrixPairs::sampled, 3));
}
