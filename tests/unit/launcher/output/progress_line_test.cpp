#include "launcher/output/progress_line.h"

#include <doctest/doctest.h>

using namespace dlaunch;

TEST_CASE("progress line: one rank's bar is redrawn in place, lines go above it") {
  ProgressLine bar;
  CHECK(bar.line(1, "[1] hello\n") == "[1] hello\n");  // no bar yet: a plain line
  REQUIRE(bar.claims(0));
  CHECK(bar.draw("[0] 10%") == "\r\x1b[K[0] 10%");
  CHECK(bar.draw("[0] 20%") == "\r\x1b[K[0] 20%");
  // Another rank's line is printed over the bar, which is drawn again below it.
  CHECK(bar.line(1, "[1] epoch 1\n") == "\r\x1b[K[1] epoch 1\n[0] 20%");
  // The bar's own last line (tqdm's final update ends in a newline) replaces it.
  CHECK(bar.line(0, "[0] 100%\n") == "\r\x1b[K[0] 100%\n");
  CHECK(bar.close().empty());
}

TEST_CASE("progress line: a second rank drawing progress turns bars back into lines") {
  ProgressLine bar;
  REQUIRE(bar.claims(0));
  bar.draw("[0] 10%");
  CHECK_FALSE(bar.claims(1));
  CHECK(bar.close() == "\n");  // the caller ends the bar on screen
  CHECK_FALSE(bar.claims(0));  // for good
  CHECK(bar.line(0, "[0] done\n") == "[0] done\n");
}
