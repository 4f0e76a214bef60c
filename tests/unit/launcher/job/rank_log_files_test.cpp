// Rank log files keep every byte, and a failing disk is reported with the
// path, the reason and the bytes lost: never silently.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "launcher/job/rank_log_files.h"
#include "tests/unit/scratch_dir.h"

using namespace dlaunch;
using dlaunch::testing::read_file;
using dlaunch::testing::ScratchDir;
namespace fs = std::filesystem;

TEST_CASE("rank log files: bytes are kept exactly, across buffer flushes") {
  ScratchDir dir;
  std::string expected;
  {
    RankLogFiles files(dir.dir().string());
    for (int i = 0; i < 20000; ++i) {
      const std::string piece = "line " + std::to_string(i) + (i % 7 ? "\n" : "\r");
      files.append(3, piece);
      expected += piece;
    }
    files.append_all("--- marker ---\n");
    expected += "--- marker ---\n";
    CHECK(files.losses().empty());
  }
  CHECK(read_file(dir.dir() / "rank-3.log") == expected);
}

TEST_CASE("rank log files: a full disk is reported with path, reason and bytes lost") {
  ScratchDir dir;
  // /dev/full fails every write with ENOSPC, as a full log disk does.
  fs::create_symlink("/dev/full", dir.dir() / "rank-0.log");
  RankLogFiles files(dir.dir().string());
  files.append(0, std::string(100, 'a'));
  files.flush();
  files.append(0, std::string(50, 'b'));
  files.flush();
  const auto losses = files.losses();
  REQUIRE(losses.size() == 1);
  CHECK(losses[0] ==
        (dir.dir() / "rank-0.log").string() + ": 150 bytes not written (No space left on device)");
}
