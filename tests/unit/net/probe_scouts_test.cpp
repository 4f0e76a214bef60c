#include "net/probe_scouts.h"

#include <doctest/doctest.h>

#include <algorithm>

using namespace dlaunch::net;

TEST_CASE("probe scouts: spread over the list, node 0 and the last among them") {
  CHECK(probe_scouts(255).empty());
  for (std::size_t nodes : {256UL, 300UL, 1000UL, 4097UL, 10'000UL, 100'000UL}) {
    const auto scouts = probe_scouts(nodes);
    REQUIRE(scouts.size() == kProbeScouts);
    CHECK(scouts.front() == 0);
    CHECK(scouts.back() == nodes - 1);
    CHECK(std::is_sorted(scouts.begin(), scouts.end()));
    CHECK(std::adjacent_find(scouts.begin(), scouts.end()) == scouts.end());
    // is_probe_scout agrees with the list for every node.
    std::size_t counted = 0;
    for (std::size_t node = 0; node < nodes; ++node) {
      const bool listed = std::binary_search(scouts.begin(), scouts.end(), node);
      CHECK(is_probe_scout(node, nodes) == listed);
      counted += listed;
    }
    CHECK(counted == kProbeScouts);
  }
  CHECK_FALSE(is_probe_scout(0, 255));
  CHECK_FALSE(is_probe_scout(10'000, 10'000));
}
