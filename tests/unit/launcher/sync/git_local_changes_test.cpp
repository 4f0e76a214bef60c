#include "launcher/sync/git_local_changes.h"
#include "tests/unit/scratch_dir.h"

#include <doctest/doctest.h>

#include <filesystem>

using namespace dlaunch;
using dlaunch::testing::ScratchDir;

TEST_CASE("a work tree is the repository's when a remote is its URL, or it is the URL's path") {
  CHECK(work_tree_of("git@example.com:org/mnist.git", "/home/u/mnist",
                     {"https://example.com/org/other.git", "git@example.com:org/mnist.git"}));
  CHECK(work_tree_of("https://example.com/org/mnist.git/", "/home/u/mnist",
                     {"https://example.com/org/mnist.git"}));
  CHECK_FALSE(work_tree_of("https://example.com/org/mnist.git", "/home/u/mnist",
                           {"https://example.com/org/other.git"}));
  CHECK_FALSE(work_tree_of("https://example.com/org/mnist.git", "/home/u/mnist", {}));
  ScratchDir dir;
  std::filesystem::create_directories(dir.path() + "/repo/.git");
  CHECK(work_tree_of(dir.path() + "/repo", dir.path() + "/repo", {}));
  CHECK(work_tree_of(dir.path() + "/repo/.git", dir.path() + "/repo", {}));
  CHECK(work_tree_of(dir.path() + "/./repo/", dir.path() + "/repo", {}));
  CHECK_FALSE(work_tree_of(dir.path() + "/elsewhere", dir.path() + "/repo", {}));
}

TEST_CASE("no warning outside a git work tree") {
  ScratchDir dir;
  CHECK_FALSE(local_changes_warning(dir.path(), dir.path(), "main").has_value());
}
