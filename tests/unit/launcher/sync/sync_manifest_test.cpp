#include "launcher/sync/sync_manifest.h"

#include <doctest/doctest.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <filesystem>
#include <fstream>

#include "protocol/sha256.h"
#include "tests/unit/scratch_dir.h"

using namespace dlaunch;
namespace fs = std::filesystem;
using dlaunch::testing::ScratchDir;
using dlaunch::testing::write_file;

namespace {

const proto::SyncEntry* find(const SyncManifest& m, const std::string& path) {
  for (const auto& e : m.entries)
    if (e.path == path) return &e;
  return nullptr;
}

}  // namespace

TEST_CASE("the manifest lists files with mode, size and SHA-256, symlinks unfollowed, dirs first") {
  const ScratchDir dir_scratch;
  const fs::path& dir = dir_scratch.dir();
  write_file(dir / "run.sh", "#!/bin/sh\n");
  ::chmod((dir / "run.sh").c_str(), 0755);
  write_file(dir / "src/a.py", "print(1)\n");
  write_file(dir / "src/b.py", "print(2)\n");
  ::chmod((dir / "src").c_str(), 0750);
  fs::create_symlink("src/a.py", dir / "latest");
  fs::create_symlink("/nonexistent/anywhere", dir / "dangling");
  write_file(dir / ".git/HEAD", "ref: refs/heads/main\n");
  write_file(dir / "w.pt", "weights");
  write_file(dir / "data/x", "x");
  write_file(dir / ".dlaunchignore", "# big things\n*.pt\ndata/\n");
  ::mkfifo((dir / "fifo").c_str(), 0600);

  auto built = build_sync_manifest(dir.string());
  REQUIRE(built.ok());
  const auto& m = *built;
  CHECK(m.root == dir.string());
  CHECK(m.ignore == std::vector<std::string>{".git", "*.pt", "data/"});
  std::vector<std::string> paths;
  for (const auto& e : m.entries) paths.push_back(e.path);
  CHECK(paths == std::vector<std::string>{".dlaunchignore", "dangling", "latest", "run.sh", "src",
                                          "src/a.py", "src/b.py"});
  CHECK(m.ignored == 3);  // .git, data, w.pt
  CHECK(m.special == 1);
  CHECK(m.files == 4);
  CHECK(m.bytes == 24 + 10 + 9 + 9);

  const auto* run = find(m, "run.sh");
  REQUIRE(run);
  CHECK(run->kind == proto::SyncKind::file);
  CHECK(run->mode == 0755);
  CHECK(run->size == 10);
  CHECK(run->sha256 == sha256("#!/bin/sh\n"));
  const auto* src = find(m, "src");
  REQUIRE(src);
  CHECK(src->kind == proto::SyncKind::dir);
  CHECK(src->mode == 0750);
  const auto* latest = find(m, "latest");
  REQUIRE(latest);
  CHECK(latest->kind == proto::SyncKind::symlink);
  CHECK(latest->target == "src/a.py");
  CHECK(find(m, "dangling")->target == "/nonexistent/anywhere");
  CHECK(describe_manifest(m) ==
        "4 files, 2 symlinks, 1 directories, 52 B; 3 ignored, 1 sockets/FIFOs/devices skipped");

  // --dry-run counts without hashing.
  auto counted = build_sync_manifest(dir.string(), false);
  REQUIRE(counted.ok());
  CHECK(find(*counted, "run.sh")->sha256.empty());
  fs::remove_all(dir);
}

TEST_CASE("a missing directory or a file instead of one is an error naming it") {
  auto missing = build_sync_manifest("/nonexistent/dlaunch-sync-src");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().find("/nonexistent/dlaunch-sync-src") != std::string::npos);
  const ScratchDir dir_scratch;
  const fs::path& dir = dir_scratch.dir();
  write_file(dir / "f", "x");
  auto file = build_sync_manifest((dir / "f").string());
  REQUIRE_FALSE(file.ok());
  CHECK(file.error().find("not a directory") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("human_bytes") {
  CHECK(human_bytes(0) == "0 B");
  CHECK(human_bytes(1023) == "1023 B");
  CHECK(human_bytes(1536) == "1.5 KiB");
  CHECK(human_bytes(3ULL << 30) == "3.0 GiB");
}
