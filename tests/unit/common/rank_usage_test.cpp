#include "common/rank_usage.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "common/posix.h"

using namespace dlaunch;

TEST_CASE("usage_from_stat: comm, utime + stime and rss in pages from proc_stat's fields") {
  std::vector<std::string> fields(52, "0");
  fields[0] = "42";
  fields[1] = "python3 (x)";
  fields[13] = "150";  // utime
  fields[14] = "50";   // stime
  fields[23] = "3";    // rss, pages
  const auto usage = usage_from_stat(fields, 4096);
  REQUIRE(usage);
  CHECK(usage->command == "python3 (x)");
  CHECK(usage->cpu_ticks == 200);
  CHECK(usage->rss_bytes == 3 * 4096);

  fields[13] = "not a number";
  CHECK_FALSE(usage_from_stat(fields, 4096));
  CHECK_FALSE(usage_from_stat(std::vector<std::string>(23, "1"), 4096));
  CHECK_FALSE(usage_from_stat({}, 4096));
}

TEST_CASE("process_usage reads this process; a pid that is gone has none") {
  const auto self = process_usage(::getpid());
  REQUIRE(self);
  CHECK(self->command == proc_stat(::getpid())[1]);
  CHECK(self->rss_bytes > 0);
  CHECK_FALSE(process_usage(0x3fffffff));
}

TEST_CASE("cpu_percent: ticks over the interval, in percent of one CPU") {
  CHECK(cpu_percent(50, 100, 1.0) == doctest::Approx(50));
  CHECK(cpu_percent(400, 100, 2.0) == doctest::Approx(200));
  CHECK(cpu_percent(0, 100, 1.0) == 0);
  CHECK(cpu_percent(50, 100, 0) == 0);
}
