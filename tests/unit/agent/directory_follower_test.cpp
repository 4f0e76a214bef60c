#include "agent/directory_follower.h"
#include "tests/unit/scratch_dir.h"

#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

using namespace dlaunch;
namespace fs = std::filesystem;

namespace {

struct FollowedDir : dlaunch::testing::ScratchDir {
  void append(const std::string& name, const std::string& bytes) const {
    fs::create_directories((dir() / name).parent_path());
    std::ofstream(dir() / name, std::ios::app | std::ios::binary) << bytes;
  }
};

// What a receiver that applies the chunks in order ends up with.
std::map<std::string, std::string> replay(std::map<std::string, std::string> copy,
                                          const std::vector<proto::FileChunk>& chunks) {
  for (const auto& c : chunks) {
    std::string& file = copy[c.path];
    if (c.restart) file.clear();
    REQUIRE(c.offset == file.size());  // in order, no gaps
    file += c.data;
  }
  return copy;
}

}  // namespace

TEST_CASE("a directory that does not exist yet gives nothing, and is caught up") {
  DirectoryFollower follower("/nonexistent/dlaunch-follow");
  CHECK(follower.next(1 << 20).empty());
  CHECK(follower.caught_up());
}

TEST_CASE("new files arrive whole, then only their new bytes, nested ones too") {
  FollowedDir d;
  d.append("events.out.tfevents.1", "abc");
  d.append("train/events.out.tfevents.2", "");
  DirectoryFollower follower(d.path(), 4);
  auto chunks = follower.next(1 << 20);
  auto copy = replay({}, chunks);
  CHECK(copy == std::map<std::string, std::string>{{"events.out.tfevents.1", "abc"},
                                                   {"train/events.out.tfevents.2", ""}});
  CHECK(chunks.front().restart);
  CHECK(follower.next(1 << 20).empty());  // nothing new

  d.append("events.out.tfevents.1", "defghij");
  chunks = follower.next(1 << 20);
  REQUIRE(chunks.size() == 2);  // 4-byte chunks
  CHECK_FALSE(chunks[0].restart);
  CHECK(chunks[0].offset == 3);
  copy = replay(copy, chunks);
  CHECK(copy["events.out.tfevents.1"] == "abcdefghij");
  CHECK(follower.bytes_sent() == 10);
}

TEST_CASE("the budget bounds the bytes of one call; the rest comes next time") {
  FollowedDir d;
  d.append("a", std::string(10, 'a'));
  d.append("b", std::string(10, 'b'));
  DirectoryFollower follower(d.path(), 4);
  std::map<std::string, std::string> copy;
  int calls = 0;
  do {
    auto chunks = follower.next(6);
    std::size_t bytes = 0;
    for (const auto& c : chunks) bytes += c.data.size();
    CHECK(bytes <= 6);
    copy = replay(copy, chunks);
    ++calls;
  } while (!follower.caught_up());
  CHECK(calls == 4);  // 20 bytes, 6 at a time
  CHECK(copy["a"] == std::string(10, 'a'));
  CHECK(copy["b"] == std::string(10, 'b'));
}

TEST_CASE("a truncated or replaced file is sent again whole") {
  FollowedDir d;
  d.append("events", "0123456789");
  DirectoryFollower follower(d.path());
  auto copy = replay({}, follower.next(1 << 20));

  std::ofstream(d.dir() / "events", std::ios::trunc) << "xy";  // truncated and rewritten
  auto chunks = follower.next(1 << 20);
  REQUIRE(chunks.size() == 1);
  CHECK(chunks[0].restart);
  copy = replay(copy, chunks);
  CHECK(copy["events"] == "xy");

  // Replaced by another file of the same size (a new inode): sent again.
  d.append("events.new", "ab");
  fs::rename(d.dir() / "events.new", d.dir() / "events");
  chunks = follower.next(1 << 20);
  REQUIRE(chunks.size() == 1);
  CHECK(chunks[0].restart);
  copy = replay(copy, chunks);
  CHECK(copy["events"] == "ab");
}

TEST_CASE("symbolic links are not followed") {
  FollowedDir d;
  d.append("real", "data");
  fs::create_symlink("/etc/hostname", d.dir() / "link");
  fs::create_directory_symlink("/etc", d.dir() / "dirlink");
  DirectoryFollower follower(d.path());
  const auto copy = replay({}, follower.next(1 << 20));
  CHECK(copy == std::map<std::string, std::string>{{"real", "data"}});
}

TEST_CASE("a FIFO under the directory is skipped, never waited on") {
  FollowedDir d;
  d.append("real", "data");
  REQUIRE(::mkfifo((d.dir() / "pipe").c_str(), 0600) == 0);
  DirectoryFollower follower(d.path());
  const auto copy = replay({}, follower.next(1 << 20));
  CHECK(copy == std::map<std::string, std::string>{{"real", "data"}});
}
