// Rank log files keep every byte, and a failing disk is reported with the
// path, the reason and the bytes lost: never silently.
#include <doctest/doctest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "launcher/output/rank_log_files.h"
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
    CHECK(files.losses().empty());
  }
  CHECK(read_file(dir.dir() / "rank-3.log") == expected);
}

TEST_CASE("rank log files: each restart round writes files of its own, nothing added") {
  ScratchDir dir;
  {
    RankLogFiles files(dir.dir().string(), 1);
    files.append(0, "first run\n");
    files.append(1, "first run of 1");
    files.start_round(1);
    files.append(0, "restart 1\n");
    files.start_round(2);
    files.append(1, "restart 2");
  }
  CHECK(read_file(dir.dir() / "rank-0.log") == "first run\n");
  CHECK(read_file(dir.dir() / "rank-1.log") == "first run of 1");
  CHECK(read_file(dir.dir() / "rank-0.1.log") == "restart 1\n");
  CHECK_FALSE(fs::exists(dir.dir() / "rank-1.1.log"));
  CHECK(read_file(dir.dir() / "rank-1.2.log") == "restart 2");
  CHECK(rank_log_name(7, 0) == "rank-7.log");
  CHECK(rank_log_name(7, 12) == "rank-7.12.log");
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

namespace {
int open_descriptors() {
  int n = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator("/proc/self/fd")) ++n;
  return n;
}
}  // namespace

TEST_CASE("rank log files: many ranks, few descriptors, every byte kept in order") {
  ScratchDir dir;
  std::vector<std::string> expected(40);
  const int before = open_descriptors();
  int most = 0;
  {
    RankLogFiles files(dir.dir().string(), 4);
    // Ranks take turns, so every file is closed and reopened many times.
    for (int round = 0; round < 50; ++round) {
      for (int rank = 0; rank < 40; ++rank) {
        const std::string line = "rank " + std::to_string(rank) + " round " +
                                 std::to_string(round) + std::string(rank * 50, 'x');
        files.append(rank, line, "\n");
        expected[static_cast<std::size_t>(rank)] += line + "\n";
      }
      if (round % 10 == 9) files.flush();
      most = std::max(most, open_descriptors() - before);
    }
    files.flush();
    most = std::max(most, open_descriptors() - before);
    CHECK(files.losses().empty());
  }
  CHECK(most <= 4);
  CHECK(open_descriptors() == before);
  for (int rank = 0; rank < 40; ++rank)
    CHECK(read_file(dir.dir() / ("rank-" + std::to_string(rank) + ".log")) ==
          expected[static_cast<std::size_t>(rank)]);
}

TEST_CASE("rank log files: the default keeps most descriptors for connections") {
  rlimit limit{};
  REQUIRE(::getrlimit(RLIMIT_NOFILE, &limit) == 0);
  const auto n = RankLogFiles::default_max_open();
  CHECK(n >= 64);
  CHECK(n <= 65'536);
  if (limit.rlim_cur != RLIM_INFINITY && limit.rlim_cur >= 256) CHECK(n <= limit.rlim_cur / 4);
}
