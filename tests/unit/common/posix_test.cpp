#include "common/posix.h"

#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

using namespace dlaunch;

TEST_CASE("process_start_ticks names a live process, not an ended one") {
  CHECK(process_start_ticks(::getpid()) > 0);
  CHECK(process_start_ticks(::getpid()) == process_start_ticks(::getpid()));
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) ::_exit(0);
  // Until it is reaped the child is a zombie: it has ended all the same.
  for (int i = 0; i < 200 && process_start_ticks(child) != 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  CHECK(process_start_ticks(child) == 0);
  ::waitpid(child, nullptr, 0);
  CHECK(process_start_ticks(child) == 0);
}
