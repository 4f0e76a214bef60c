#include "launcher/job/container_start_failure.h"

#include <doctest/doctest.h>

using namespace dlaunch;

TEST_CASE("a container init's exec failure is told from the rank's last lines") {
  CHECK(container_start_failure(
            {"ERROR (catatonit:6): failed to exec pid1: No such file or directory"}) ==
        "No such file or directory");
  CHECK(container_start_failure({"[FATAL tini (7)] exec python3 failed: Permission denied"}) ==
        "Permission denied");
  // Only as the last line, and only the init's own words.
  CHECK_FALSE(container_start_failure(
      {"ERROR (catatonit:6): failed to exec pid1: No such file or directory", "later"}));
  CHECK_FALSE(container_start_failure({"Traceback: failed to exec pid1: x"}));
  CHECK_FALSE(container_start_failure({}));
}
