#include <doctest/doctest.h>

#include "launcher/config/duration.h"

using namespace dlaunch;
using std::chrono::milliseconds;

TEST_CASE("durations as written on a command line") {
  CHECK(*parse_duration("90s") == milliseconds(90'000));
  CHECK(*parse_duration("90") == milliseconds(90'000));
  CHECK(*parse_duration("10m") == milliseconds(600'000));
  CHECK(*parse_duration("2h") == milliseconds(7'200'000));
  CHECK(*parse_duration("1h30m") == milliseconds(5'400'000));
  CHECK(*parse_duration("500ms") == milliseconds(500));
  CHECK(*parse_duration("0") == milliseconds(0));
  for (const char* bad : {"", "s", "10x", "-5s", "1.5h", "10 5m", "5m10"})
    CHECK_FALSE(parse_duration(bad));
  CHECK(parse_duration("ten").error() ==
        "expected a duration like 90s, 10m, 2h or 1h30m, got 'ten'");
  CHECK(parse_duration("200h").error() == "'200h' is more than a week");
}
