#include <doctest/doctest.h>

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
