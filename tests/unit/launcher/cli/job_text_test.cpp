#include "launcher/cli/job_text.h"

#include <doctest/doctest.h>

using namespace dlaunch;

TEST_CASE("command_text shows plain words bare and quotes the rest for a shell") {
  CHECK(command_text({"mnist_dist", "--epochs", "10", "/bin/echo", "--lr=0.1"}) ==
        "mnist_dist --epochs 10 /bin/echo --lr=0.1");
  CHECK(command_text({"sh", "-c", "echo $RANK; exit 9"}) == "sh -c 'echo $RANK; exit 9'");
  CHECK(command_text({"echo", ""}) == "echo ''");
  // A single quote ends a quoted word, so it is written as '\''.
  CHECK(command_text({"echo", "it's"}) == "echo 'it'\\''s'");
  CHECK(command_text({}).empty());
}

TEST_CASE("durations and times as the job tables show them") {
  CHECK(format_duration(-1) == "-");
  CHECK(format_duration(0) == "0s");
  CHECK(format_duration(59) == "59s");
  CHECK(format_duration(187) == "3m07s");
  CHECK(format_duration(7500) == "2h05m");
  CHECK(format_time(0) == "-");
  CHECK(format_time(1).size() == 19);
}

TEST_CASE("formatted keeps printf's byte widths") {
  CHECK(formatted("%-6s|%4s|%5d", "ab", "x", 42) == "ab    |   x|   42");
  CHECK(formatted("%s", "").empty());
  CHECK(formatted("%s", std::string(1000, 'y').c_str()).size() == 1000);
}
