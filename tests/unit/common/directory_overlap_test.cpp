#include "common/directory_overlap.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>

#include "tests/unit/scratch_dir.h"

using namespace dlaunch;

namespace {

DirectoryIdentity identity_of(const std::string& path) {
  auto id = identify_directory(path);
  REQUIRE(id);
  return *id;
}

}  // namespace

TEST_CASE("a sync destination that holds, is, or lies inside its source overlaps it") {
  dlaunch::testing::ScratchDir dir;
  const std::string proj = dir.path() + "/proj";
  std::filesystem::create_directories(proj + "/src/deep");
  std::filesystem::create_directories(dir.path() + "/elsewhere");
  const auto src = identity_of(proj + "/src");
  CHECK(directory_overlap(src, proj) == Overlap::source_inside_dest);
  CHECK(directory_overlap(src, dir.path()) == Overlap::source_inside_dest);
  CHECK(directory_overlap(src, proj + "/src") == Overlap::same);
  CHECK(directory_overlap(src, proj + "/src/deep") == Overlap::dest_inside_source);
  CHECK(directory_overlap(src, dir.path() + "/elsewhere") == Overlap::none);
  CHECK(directory_overlap(src, "/") == Overlap::source_inside_dest);

  // One directory spelt through a symbolic link is still the same one.
  REQUIRE(::symlink((proj + "/src").c_str(), (dir.path() + "/link").c_str()) == 0);
  CHECK(directory_overlap(src, dir.path() + "/link") == Overlap::same);
  CHECK(directory_overlap(src, dir.path() + "/link/deep") == Overlap::dest_inside_source);
}

TEST_CASE("a source taken on another machine, or gone, overlaps nothing here") {
  dlaunch::testing::ScratchDir dir;
  std::filesystem::create_directories(dir.path() + "/src");
  auto src = identity_of(dir.path() + "/src");
  REQUIRE_FALSE(src.machine.empty());
  auto other = src;
  other.machine = "another-machine/another-boot";
  CHECK(directory_overlap(other, dir.path()) == Overlap::none);
  auto unknown = src;
  unknown.machine.clear();
  CHECK(directory_overlap(unknown, dir.path()) == Overlap::none);
  // The path names another directory here (another mount namespace, say).
  auto moved = src;
  moved.inode += 1;
  CHECK(directory_overlap(moved, dir.path()) == Overlap::none);
  std::filesystem::remove(dir.path() + "/src");
  CHECK(directory_overlap(src, dir.path()) == Overlap::none);
}

TEST_CASE("the refusal names both directories and says what to do") {
  const auto text = describe_overlap(Overlap::source_inside_dest, "/p/src", "/p");
  CHECK(text ==
        "--sync /p/src would be written into /p, which holds it: --sync-delete there would "
        "delete the source itself; refused (choose a --workdir outside /p/src, and not one that "
        "holds it)");
  CHECK(describe_overlap(Overlap::none, "/p/src", "/p").empty());
  CHECK(identify_directory("/no/such/dir").error() == "/no/such/dir: No such file or directory");
}
