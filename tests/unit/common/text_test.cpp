#include <doctest/doctest.h>

#include "common/text.h"

using namespace dlaunch;

TEST_CASE("counts grouped by thousands as messages show them") {
  CHECK(grouped(0) == "0");
  CHECK(grouped(999) == "999");
  CHECK(grouped(1000) == "1,000");
  CHECK(grouped(20131) == "20,131");
  CHECK(grouped(3998000) == "3,998,000");
  CHECK(grouped(100000) == "100,000");
}
