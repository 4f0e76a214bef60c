#include "protocol/relative_path.h"

#include <doctest/doctest.h>

#include <string>

using namespace dlaunch;

TEST_CASE("relative paths: files under a directory, never outside it") {
  CHECK(safe_relative_path("a/b.txt"));
  CHECK(safe_relative_path(".hidden/..x"));
  CHECK(safe_relative_path("events.out.tfevents.1"));
  CHECK(safe_relative_path("train/run 1/events"));
  for (const char* bad :
       {"", "/etc/passwd", "../x", "a/../../x", "a/./x", "a//b", "a//x", "./a", "a/.", "a/"}) {
    CAPTURE(bad);
    CHECK_FALSE(safe_relative_path(bad));
  }
  CHECK_FALSE(safe_relative_path(std::string("a\0b", 3)));
}
