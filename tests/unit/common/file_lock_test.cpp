#include "common/file_lock.h"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <optional>

#include "tests/unit/scratch_dir.h"

using namespace dlaunch;

TEST_CASE("a file lock is held until it goes; another process waits for it meanwhile") {
  dlaunch::testing::ScratchDir dir;
  const std::string path = dir.path() + "/.lock";
  std::optional<FileLock> held;
  {
    auto lock = FileLock::take(path, 0600);
    REQUIRE(lock);
    held.emplace(std::move(*lock));  // a moved-from lock releases nothing
  }
  // Another process cannot take it now (a non-blocking try from a child).
  const auto other_process_can_take = [&] {
    const pid_t child = ::fork();
    if (child == 0) {
      const int fd = ::open(path.c_str(), O_RDWR);
      ::_exit(fd >= 0 && ::flock(fd, LOCK_EX | LOCK_NB) == 0 ? 0 : 1);
    }
    int status = 0;
    ::waitpid(child, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
  };
  CHECK_FALSE(other_process_can_take());
  held.reset();
  CHECK(other_process_can_take());
}

TEST_CASE("a file lock where none can be made names the file and why") {
  dlaunch::testing::ScratchDir dir;
  const auto lock = FileLock::take(dir.path() + "/missing/.lock", 0600);
  REQUIRE_FALSE(lock);
  CHECK(lock.error() == "cannot open " + dir.path() + "/missing/.lock: No such file or directory");
}
