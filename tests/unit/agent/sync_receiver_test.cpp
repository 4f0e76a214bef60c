#include "agent/sync_receiver.h"

#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "protocol/sha256.h"
#include "tests/unit/scratch_dir.h"

using namespace dlaunch;
namespace fs = std::filesystem;
using dlaunch::testing::read_file;
using dlaunch::testing::ScratchDir;
using dlaunch::testing::write_file;

namespace {

unsigned mode_of(const fs::path& p) {
  struct stat st {};
  ::lstat(p.c_str(), &st);
  return st.st_mode & 07777;
}

proto::SyncEntry dir_entry(std::string path, std::uint32_t mode = 0755) {
  return {std::move(path), proto::SyncKind::dir, mode};
}
proto::SyncEntry file_entry(std::string path, const std::string& content,
                            std::uint32_t mode = 0644) {
  return {std::move(path), proto::SyncKind::file, mode, content.size(), sha256(content)};
}
proto::SyncEntry link_entry(std::string path, std::string target) {
  return {std::move(path), proto::SyncKind::symlink, 0, 0, "", std::move(target)};
}

// Plays the coordinator: offers `entries`, answers every want with `contents`
// (by index) in pieces of `piece` bytes. Returns the indices wanted.
std::vector<std::uint32_t> sync(SyncReceiver& r, std::vector<proto::SyncEntry> entries,
                                const std::map<std::uint32_t, std::string>& contents,
                                bool delete_extra = false, std::size_t piece = 3) {
  proto::SyncOffer offer{delete_extra, {".git", "*.pt", "data/"}, 0, std::move(entries), true};
  REQUIRE(r.on_offer(std::move(offer)));
  bool done = false;
  while (!done)
    if (!r.compare_step(1, &done)) return {};
  std::vector<std::uint32_t> wanted;
  for (const auto& w : r.take_wants())
    wanted.insert(wanted.end(), w.indices.begin(), w.indices.end());
  for (const auto index : wanted) {
    const std::string& content = contents.at(index);
    std::size_t at = 0;
    do {
      const auto n = std::min(piece, content.size() - at);
      if (!r.on_data({index, at, content.substr(at, n)})) return wanted;
      at += n;
    } while (at < content.size());
  }
  return wanted;
}

}  // namespace

TEST_CASE("a first sync writes files with their modes, symlinks and directories") {
  const ScratchDir dest_scratch;
  const fs::path& dest = dest_scratch.dir();
  SyncReceiver r(dest.string());
  REQUIRE_FALSE(r.failed());
  const auto wanted =
      sync(r,
           {file_entry("run.sh", "#!/bin/sh\necho hi\n", 0755), dir_entry("src", 0750),
            file_entry("src/a.py", "print(1)\n"), file_entry("src/empty", ""),
            link_entry("latest", "src/a.py"), dir_entry("ro", 0555),
            file_entry("ro/f", "read only", 0444)},
           {{0, "#!/bin/sh\necho hi\n"}, {2, "print(1)\n"}, {3, ""}, {6, "read only"}});
  CHECK(wanted == std::vector<std::uint32_t>{0, 2, 3, 6});
  REQUIRE(r.data_complete());
  const auto done = r.finish();
  CHECK(done.error.empty());
  CHECK(done.files_written == 5);  // 4 files and the symlink
  CHECK(done.bytes_received == 18 + 9 + 9);
  CHECK(read_file(dest / "run.sh") == "#!/bin/sh\necho hi\n");
  CHECK(mode_of(dest / "run.sh") == 0755);
  CHECK(mode_of(dest / "src") == 0750);
  CHECK(mode_of(dest / "src/a.py") == 0644);
  CHECK(fs::is_regular_file(dest / "src/empty"));
  CHECK(fs::is_symlink(dest / "latest"));
  CHECK(fs::read_symlink(dest / "latest") == "src/a.py");
  CHECK(mode_of(dest / "ro") == 0555);  // set after its file was written
  CHECK(read_file(dest / "ro/f") == "read only");
  // No temporary file is left behind.
  for (const auto& e : fs::recursive_directory_iterator(dest))
    CHECK(e.path().filename().string().find(".dlaunch-sync-") == std::string::npos);
  fs::permissions(dest / "ro", fs::perms::owner_all);
  fs::remove_all(dest);
}

TEST_CASE("only files whose content differs are wanted; a mode change needs no data") {
  const ScratchDir dest_scratch;
  const fs::path& dest = dest_scratch.dir();
  write_file(dest / "same", "same content");
  ::chmod((dest / "same").c_str(), 0644);
  write_file(dest / "mode", "mode only");
  ::chmod((dest / "mode").c_str(), 0644);
  write_file(dest / "changed", "old!");  // same size, other content
  write_file(dest / "longer", "short");
  fs::create_symlink("elsewhere", dest / "link");
  SyncReceiver r(dest.string());
  const auto wanted =
      sync(r,
           {file_entry("changed", "new!"), file_entry("longer", "much longer"),
            link_entry("link", "same"), file_entry("missing", "m"),
            file_entry("mode", "mode only", 0700), file_entry("same", "same content")},
           {{0, "new!"}, {1, "much longer"}, {3, "m"}});
  CHECK(wanted == std::vector<std::uint32_t>{0, 1, 3});
  const auto done = r.finish();
  CHECK(done.error.empty());
  CHECK(done.bytes_received == 4 + 11 + 1);
  CHECK(read_file(dest / "changed") == "new!");
  CHECK(mode_of(dest / "mode") == 0700);
  CHECK(fs::read_symlink(dest / "link") == "same");
  fs::remove_all(dest);
}

TEST_CASE("content that does not match its SHA-256 is never renamed into place") {
  const ScratchDir dest_scratch;
  const fs::path& dest = dest_scratch.dir();
  write_file(dest / "f", "original");
  SyncReceiver r(dest.string());
  proto::SyncEntry e = file_entry("f", "expected");
  sync(r, {e}, {{0, "tampered"}});
  CHECK(r.failed());
  CHECK(r.error().find("f: the content received does not match its SHA-256") == 0);
  CHECK(read_file(dest / "f") == "original");
  CHECK(std::distance(fs::directory_iterator(dest), fs::directory_iterator()) == 1);
  CHECK_FALSE(r.finish().error.empty());
  fs::remove_all(dest);
}

TEST_CASE("a parent that is a symlink is refused, wherever it points") {
  const ScratchDir dest_scratch;
  const fs::path& dest = dest_scratch.dir();
  const ScratchDir outside_scratch;
  const fs::path& outside = outside_scratch.dir();
  fs::create_symlink(outside, dest / "escape");
  SyncReceiver r(dest.string());
  sync(r, {file_entry("escape/owned", "x")}, {{0, "x"}});
  CHECK(r.failed());
  CHECK(r.error().find("escape: is a symbolic link or not a directory here") == 0);
  CHECK_FALSE(fs::exists(outside / "owned"));
  // A symlink offered where the destination has a directory of the same name
  // comes in as a symlink; nothing is written through it.
  fs::remove_all(dest);
  fs::create_directories(dest);
  SyncReceiver r2(dest.string());
  sync(r2, {link_entry("d", outside.string()), file_entry("d/x", "x")}, {{1, "x"}});
  CHECK(r2.failed());
  CHECK_FALSE(fs::exists(outside / "x"));
  fs::remove_all(dest);
  fs::remove_all(outside);
}

TEST_CASE("unsafe paths and out-of-order offers or data fail the sync") {
  const ScratchDir dest_scratch;
  const fs::path& dest = dest_scratch.dir();
  {
    SyncReceiver r(dest.string());
    CHECK_FALSE(r.on_offer({false, {}, 0, {file_entry("../x", "x")}, true}));
    CHECK(r.error().find("../x: not a safe relative path") == 0);
  }
  {
    SyncReceiver r(dest.string());
    CHECK_FALSE(r.on_offer({false, {}, 5, {file_entry("x", "x")}, true}));
  }
  {
    SyncReceiver r(dest.string());
    REQUIRE(r.on_offer({false, {}, 0, {file_entry("x", "abc")}, true}));
    bool done = false;
    REQUIRE(r.compare_step(1024, &done));
    REQUIRE(done);
    r.take_wants();
    CHECK_FALSE(r.on_data({0, 1, "bc"}));  // skips the first byte
    CHECK(r.failed());
  }
  {
    SyncReceiver r(dest.string());
    REQUIRE(r.on_offer({false, {}, 0, {file_entry("x", "abc")}, true}));
    bool done = false;
    REQUIRE(r.compare_step(1024, &done));
    r.take_wants();
    CHECK_FALSE(r.on_data({0, 0, "abcd"}));  // past its size
  }
  CHECK_FALSE(fs::exists(dest / "x"));
  fs::remove_all(dest);
}

TEST_CASE("--sync-delete removes what the offer lacks, except ignored paths and .git") {
  const ScratchDir dest_scratch;
  const fs::path& dest = dest_scratch.dir();
  fs::create_directories(dest / "keep/old");
  write_file(dest / "keep/a", "a");
  write_file(dest / "keep/old/f", "f");
  write_file(dest / "gone.txt", "g");
  write_file(dest / "model.pt", "ignored: stays");
  fs::create_directories(dest / "data/sub");
  write_file(dest / "data/sub/x", "ignored dir: stays");
  fs::create_directories(dest / ".git");
  write_file(dest / ".git/HEAD", "stays");
  fs::create_symlink("/etc", dest / "stray-link");
  SyncReceiver r(dest.string());
  sync(r, {dir_entry("keep"), file_entry("keep/a", "a")}, {}, true);
  const auto done = r.finish();
  CHECK(done.error.empty());
  CHECK(done.deleted == 3);  // keep/old (with its file), gone.txt, stray-link
  CHECK(fs::exists(dest / "keep/a"));
  CHECK_FALSE(fs::exists(dest / "keep/old"));
  CHECK_FALSE(fs::exists(dest / "gone.txt"));
  CHECK_FALSE(fs::is_symlink(dest / "stray-link"));
  CHECK(fs::exists(dest / "model.pt"));
  CHECK(fs::exists(dest / "data/sub/x"));
  CHECK(fs::exists(dest / ".git/HEAD"));
  CHECK(fs::exists("/etc"));
  fs::remove_all(dest);
}

TEST_CASE("without --sync-delete nothing is deleted and a non-empty directory in the way fails") {
  const ScratchDir dest_scratch;
  const fs::path& dest = dest_scratch.dir();
  write_file(dest / "extra", "stays");
  fs::create_directories(dest / "was-dir/x");
  SyncReceiver r(dest.string());
  sync(r, {file_entry("was-dir", "now a file")}, {{0, "now a file"}});
  CHECK(r.failed());
  CHECK(r.error().find("was-dir: a non-empty directory is in the way") == 0);
  CHECK(fs::exists(dest / "extra"));
  fs::remove_all(dest);
}

TEST_CASE("hashing existing files goes a budget at a time") {
  const ScratchDir dest_scratch;
  const fs::path& dest = dest_scratch.dir();
  const std::string big(1 << 20, 'b');
  write_file(dest / "big", big);
  SyncReceiver r(dest.string());
  REQUIRE(r.on_offer({false, {}, 0, {file_entry("big", big)}, true}));
  int steps = 0;
  bool done = false;
  while (!done) {
    REQUIRE(r.compare_step(64 * 1024, &done));
    ++steps;
  }
  CHECK(steps >= 16);
  const auto wants = r.take_wants();
  REQUIRE(wants.size() == 1);
  CHECK(wants[0].indices.empty());
  CHECK(wants[0].last);
  CHECK(r.data_complete());
  CHECK(r.finish().error.empty());
  fs::remove_all(dest);
}

TEST_CASE("the image cache takes a file of the offered size as it is, and writes a missing one") {
  const ScratchDir dest_scratch;
  const fs::path& dest = dest_scratch.dir();
  const std::string image = "an image archive";
  const std::string name = to_hex(sha256(image)) + ".tar";
  write_file(dest / name, std::string(image.size(), 'x'));  // cached: never hashed again
  SyncReceiver cached(dest.string(), /*trust_sizes=*/true);
  CHECK(sync(cached, {file_entry(name, image)}, {}).empty());
  CHECK(cached.finish().bytes_received == 0);
  fs::remove(dest / name);
  SyncReceiver missing(dest.string(), true);
  CHECK(sync(missing, {file_entry(name, image)}, {{0, image}}) == std::vector<std::uint32_t>{0});
  CHECK(missing.finish().error.empty());
  CHECK(read_file(dest / name) == image);
  // A working directory's file of the same size is hashed and found different.
  write_file(dest / "same_size", std::string(image.size(), 'x'));
  SyncReceiver workdir(dest.string());
  CHECK(sync(workdir, {file_entry("same_size", image)}, {{0, image}}) ==
        std::vector<std::uint32_t>{0});
}
