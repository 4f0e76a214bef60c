#include "common/captured_command.h"

#include <doctest/doctest.h>

using namespace dlaunch;
using namespace std::chrono_literals;

TEST_CASE("a helper's stdout, stderr and exit code are kept apart") {
  const auto run = run_captured({"/bin/sh", "-c", "echo out; echo err >&2; exit 3"}, 10s);
  CHECK(run.started);
  CHECK_FALSE(run.timed_out);
  CHECK(run.exit_code == 3);
  CHECK(run.out == "out\n");
  CHECK(run.err == "err\n");
  CHECK_FALSE(run.ok());
}

TEST_CASE("a missing helper did not start; a hung one is killed at its timeout") {
  CHECK_FALSE(run_captured({"/nonexistent/helper"}, 10s).started);
  const auto hung = run_captured({"/bin/sh", "-c", "echo begun; exec sleep 30"}, 300ms);
  CHECK(hung.timed_out);
  CHECK(hung.out == "begun\n");
  CHECK_FALSE(hung.ok());
}

TEST_CASE("extra variables reach the helper over the inherited ones") {
  const auto run = run_captured({"/bin/sh", "-c", "echo \"$DLAUNCH_T1 $HOME\""}, 10s, 1000,
                                {{"DLAUNCH_T1", "one"}, {"HOME", "/elsewhere"}});
  CHECK(run.out == "one /elsewhere\n");
}

TEST_CASE("output beyond the limit is drained and dropped, not kept") {
  const auto run = run_captured({"/bin/sh", "-c", "head -c 100000 /dev/zero"}, 10s, 1000);
  CHECK(run.ok());
  CHECK(run.out.size() == 1000);
}

TEST_CASE("a failed helper's last words: stderr's last lines, else stdout's, else its code") {
  CHECK(last_words(run_captured({"/bin/sh", "-c", "echo a >&2; echo b >&2; exit 1"}, 10s)) ==
        "a\nb");
  CHECK(last_words(run_captured({"/bin/sh", "-c", "echo only-out; exit 1"}, 10s)) == "only-out");
  CHECK(last_words(run_captured({"/bin/sh", "-c", "exit 4"}, 10s)) == "exit code 4");
  // The cause before the advice, as git prints them.
  CHECK(last_words(
            run_captured({"/bin/sh", "-c",
                          "echo \"fatal: '/x' does not appear to be a git repository\" >&2; "
                          "echo 'fatal: Could not read from remote repository.' >&2; echo >&2; "
                          "echo 'Please make sure you have the correct access rights' >&2; "
                          "echo 'and the repository exists.' >&2; exit 128"},
                         10s)) ==
        "fatal: '/x' does not appear to be a git repository\n"
        "fatal: Could not read from remote repository.");
}
