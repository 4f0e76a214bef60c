#include "launcher/record/space_reserve.h"
#include "tests/unit/scratch_dir.h"

#include <doctest/doctest.h>
#include <sys/stat.h>

#include <filesystem>

using namespace dlaunch;
using dlaunch::testing::ScratchDir;
namespace fs = std::filesystem;

TEST_CASE("a space reserve holds real blocks until it is released or goes") {
  ScratchDir dir;
  const std::string path = dir.path() + "/.record-reserve";
  {
    SpaceReserve reserve(path, 100 * 1024);
    REQUIRE(reserve.held());
    struct stat st {};
    REQUIRE(::stat(path.c_str(), &st) == 0);
    CHECK(st.st_size == 100 * 1024);
    // Allocated, not a hole: a hole would free nothing when released.
    CHECK(static_cast<long long>(st.st_blocks) * 512 >= 100 * 1024);
    SpaceReserve moved = std::move(reserve);
    CHECK_FALSE(reserve.held());
    CHECK(moved.held());
    CHECK(moved.release());
    CHECK_FALSE(fs::exists(path));
    CHECK_FALSE(moved.release());
  }
  { SpaceReserve reserve(path, 4096); }
  CHECK_FALSE(fs::exists(path));
}

TEST_CASE("a space reserve where it cannot be made holds nothing") {
  SpaceReserve reserve("/nonexistent-dir/.record-reserve", 4096);
  CHECK_FALSE(reserve.held());
  CHECK_FALSE(reserve.release());
}

TEST_CASE("the record's reserve grows with the nodes") {
  CHECK(record_reserve_bytes(0) == 64 * 1024);
  CHECK(record_reserve_bytes(10000) > 10000 * 112 + 64 * 1024);
}
