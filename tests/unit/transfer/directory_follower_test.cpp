#include "transfer/directory_follower.h"
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
  DirectoryFollower follower(d.path(), {.chunk_bytes = 4});
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
  DirectoryFollower follower(d.path(), {.chunk_bytes = 4});
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

TEST_CASE("the chunk that reaches a file's size is marked complete") {
  FollowedDir d;
  d.append("a", "0123456789");
  d.append("empty", "");
  DirectoryFollower follower(d.path(), {.chunk_bytes = 4});
  const auto chunks = follower.next(1 << 20);
  REQUIRE(chunks.size() == 4);  // a: 4 + 4 + 2 bytes; empty: its restart
  CHECK_FALSE(chunks[0].complete);
  CHECK_FALSE(chunks[1].complete);
  CHECK(chunks[2].complete);
  CHECK(chunks[3].path == "empty");
  CHECK(chunks[3].restart);
  CHECK(chunks[3].complete);
}

TEST_CASE("checkpoints: a file goes out once it settled, whole; *.tmp and partial copies never") {
  FollowedDir d;
  d.append("model.pt", "v1");
  d.append("model.pt.tmp", "being written");
  d.append(".model.pt.dlaunch-part", "a mirror's unfinished copy");
  DirectoryFollower follower(d.path(), {.set = proto::FileSet::checkpoint,
                                        .settled_only = true,
                                        .settle = std::chrono::milliseconds(0)});
  // First seen: not yet known to be finished.
  CHECK(follower.next(1 << 20).empty());
  CHECK_FALSE(follower.caught_up());
  auto chunks = follower.next(1 << 20);
  REQUIRE(chunks.size() == 1);
  CHECK(chunks[0].path == "model.pt");
  CHECK(chunks[0].set == proto::FileSet::checkpoint);
  CHECK(chunks[0].restart);
  CHECK(chunks[0].complete);
  CHECK(chunks[0].data == "v1");
  CHECK(follower.caught_up());
  CHECK(follower.next(1 << 20).empty());

  // Rewritten in place (the same inode): sent again whole once it settles.
  std::ofstream(d.dir() / "model.pt", std::ios::trunc) << "version 2";
  CHECK(follower.next(1 << 20).empty());
  chunks = follower.next(1 << 20);
  REQUIRE(chunks.size() == 1);
  CHECK(chunks[0].restart);
  CHECK(chunks[0].data == "version 2");
}

TEST_CASE("a file marked sent is not sent back until it changes") {
  FollowedDir d;
  d.append("model.pt", "from the coordinator");
  DirectoryFollower follower(d.path(), {.set = proto::FileSet::checkpoint,
                                        .settled_only = true,
                                        .settle = std::chrono::milliseconds(0)});
  follower.mark_sent("model.pt");
  CHECK(follower.next(1 << 20).empty());
  CHECK(follower.next(1 << 20).empty());
  CHECK(follower.caught_up());
  d.append("model.pt", ", then trained on");
  CHECK(follower.next(1 << 20).empty());  // settling
  const auto chunks = follower.next(1 << 20);
  REQUIRE(chunks.size() == 1);
  CHECK(chunks[0].data == "from the coordinator, then trained on");
}

TEST_CASE("checkpoints: a file modified within the settle time is not sent yet") {
  FollowedDir d;
  d.append("model.pt", "just written");
  DirectoryFollower follower(d.path(), {.set = proto::FileSet::checkpoint,
                                        .settled_only = true,
                                        .settle = std::chrono::minutes(10)});
  CHECK(follower.next(1 << 20).empty());
  CHECK(follower.next(1 << 20).empty());
  CHECK_FALSE(follower.caught_up());
}
