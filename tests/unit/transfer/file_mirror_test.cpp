#include "transfer/file_mirror.h"
#include "tests/unit/scratch_dir.h"

#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

using namespace dlaunch;
using dlaunch::testing::read_file;
using dlaunch::testing::ScratchDir;
namespace fs = std::filesystem;

TEST_CASE("chunks are written at their offsets; a restart empties the copy first") {
  ScratchDir d;
  FileMirror mirror((d.dir() / "tensorboard").string());
  CHECK(mirror.write({"train/events", 0, true, "abc"}));
  CHECK(mirror.write({"train/events", 3, false, "def"}));
  CHECK(read_file(d.dir() / "tensorboard/train/events") == "abcdef");
  struct stat st {};
  REQUIRE(::stat((d.dir() / "tensorboard/train/events").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  CHECK(mirror.write({"train/events", 0, true, "x"}));
  CHECK(read_file(d.dir() / "tensorboard/train/events") == "x");
  CHECK(mirror.write({"empty", 0, true, ""}));
  CHECK(fs::exists(d.dir() / "tensorboard/empty"));
}

TEST_CASE("a bad path or a failed write is reported once, naming the file") {
  ScratchDir d;
  FileMirror mirror((d.dir() / "tensorboard").string());
  auto written = mirror.write({"../escape", 0, true, "x"});
  REQUIRE_FALSE(written);
  CHECK(written.error().find("'../escape'") != std::string::npos);
  CHECK(mirror.write({"../escape", 0, true, "x"}));  // once
  CHECK_FALSE(fs::exists(d.dir() / "escape"));

  // A file where a directory must go.
  CHECK(mirror.write({"a", 0, true, "x"}));
  written = mirror.write({"a/b", 0, true, "y"});
  REQUIRE_FALSE(written);
  CHECK(written.error().find("tensorboard/a/b") != std::string::npos);
  CHECK(mirror.write({"a/b", 1, false, "z"}));  // skipped quietly from then on
}

TEST_CASE("whole files: a file appears only when its last chunk came, and keeps its last version") {
  ScratchDir d;
  const auto root = d.dir() / "deep/checkpoint";  // created with its parents
  FileMirror mirror(root.string(), {.whole_files = true, .what = "checkpoint"});
  using proto::FileSet;
  CHECK(mirror.write({"model.pt", 0, true, "ver", FileSet::checkpoint, false}));
  CHECK_FALSE(fs::exists(root / "model.pt"));
  CHECK(read_file(root / ".model.pt.dlaunch-part") == "ver");
  CHECK(is_partial_file(".model.pt.dlaunch-part"));
  CHECK(mirror.write({"model.pt", 3, false, "sion 1", FileSet::checkpoint, true}));
  CHECK(read_file(root / "model.pt") == "version 1");
  CHECK_FALSE(fs::exists(root / ".model.pt.dlaunch-part"));

  // A second version that never completes (its sender died) leaves the first.
  CHECK(mirror.write({"model.pt", 0, true, "vers", FileSet::checkpoint, false}));
  CHECK(read_file(root / "model.pt") == "version 1");
  // The rest of a version whose start was not seen is ignored.
  ScratchDir other;
  FileMirror fresh((other.dir() / "c").string(), {.whole_files = true});
  CHECK(fresh.write({"model.pt", 4, false, "ion 2", FileSet::checkpoint, true}));
  CHECK_FALSE(fs::exists(other.dir() / "c/model.pt"));
  // A path that names a partial copy is refused.
  CHECK_FALSE(mirror.write({".x.dlaunch-part", 0, true, "", FileSet::checkpoint, true}));
}

TEST_CASE("what one sender can make the copy hold is bounded: no holes, a byte cap, a file cap") {
  ScratchDir d;
  FileMirror mirror((d.dir() / "tb").string(), {.max_bytes = 10});
  // A chunk at 2^36 once made a 64 GiB sparse file.
  CHECK(mirror.write({"events", 0, true, "abc"}));
  auto hole = mirror.write({"events", std::uint64_t{1} << 36, false, "x"});
  REQUIRE_FALSE(hole);
  CHECK(hole.error() ==
        "refused TensorBoard file events from rank 0's host: a chunk at offset 68719476736, past "
        "the 3 bytes that came before it");
  CHECK(fs::file_size(d.dir() / "tb/events") == 3);
  CHECK(mirror.write({"late", 5, false, "x"}).error().find("past the 0 bytes") !=
        std::string::npos);
  CHECK_FALSE(mirror.write({"again", 1, true, "x"}));  // a version starts at 0

  // Ten bytes in all: 3 + 7 fit, one more does not; a restart gives its bytes back.
  CHECK(mirror.write({"second", 0, true, "1234567"}));
  auto over = mirror.write({"third", 0, true, "z"});
  REQUIRE_FALSE(over);
  CHECK(over.error().find("would take more than 10 bytes") != std::string::npos);
  CHECK_FALSE(fs::exists(d.dir() / "tb/third"));
  CHECK(mirror.write({"second", 0, true, "12"}));
  CHECK(mirror.write({"fourth", 0, true, "12345"}));
  CHECK(read_file(d.dir() / "tb/fourth") == "12345");
}

TEST_CASE("refused paths are said up to kMaxFiles, then once, and never remembered past it") {
  ScratchDir d;
  FileMirror mirror((d.dir() / "tb").string());
  std::size_t said = 0;
  for (std::size_t i = 0; i < FileMirror::kMaxFiles + 100; ++i) {
    auto r = mirror.write({"../" + std::to_string(i), 0, true, "x"});
    if (!r) ++said;
  }
  CHECK(said == FileMirror::kMaxFiles + 1);
  CHECK(mirror.write({"../not-said", 0, true, "x"}));
}
