#include "common/log.h"

#include <doctest/doctest.h>

using namespace dlaunch;

TEST_CASE("format_line: the program's name, the level and the message") {
  // The unit tests' process names no program, as a program before its main has.
  CHECK(log::format_line(log::Level::error, "no spec") == "error: no spec");
  log::set_program_name("dlaunch-agent");
  CHECK(log::format_line(log::Level::warn, "cannot connect") ==
        "dlaunch-agent: warning: cannot connect");
  CHECK(log::format_line(log::Level::info, "x") == "dlaunch-agent: info: x");
  CHECK(log::format_line(log::Level::debug, "") == "dlaunch-agent: debug: ");
  log::set_program_name("");
}
