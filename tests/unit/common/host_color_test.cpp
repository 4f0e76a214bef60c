#include <doctest/doctest.h>

#include "common/host_color.h"

using namespace dlaunch;

TEST_CASE("host_color: only on a terminal, never with NO_COLOR set") {
  CHECK(color_allowed(true, nullptr));
  CHECK(color_allowed(true, ""));  // set but empty counts as unset
  CHECK_FALSE(color_allowed(true, "1"));
  CHECK_FALSE(color_allowed(true, "0"));  // any non-empty value
  CHECK_FALSE(color_allowed(false, nullptr));
  CHECK_FALSE(color_allowed(false, "1"));
}

TEST_CASE("host_color: a color per host index, repeating after the palette") {
  CHECK(host_color(0) != host_color(1));
  CHECK(host_color(1) != host_color(2));
  std::size_t period = 1;
  while (host_color(period) != host_color(0)) ++period;
  CHECK(period >= 5);
  CHECK(host_color(period + 3) == host_color(3));
  CHECK(colored("[h1:0]", 0) == std::string(host_color(0)) + "[h1:0]" + "\x1b[0m");
  CHECK(host_color(0).starts_with("\x1b["));
}
