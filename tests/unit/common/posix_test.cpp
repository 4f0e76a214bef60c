#include "common/posix.h"

#include <doctest/doctest.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <unistd.h>
#include <csignal>

#include <algorithm>
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

TEST_CASE("descendants_of finds children, grandchildren and a thread's children, not zombies") {
  // Each child waits for the end of `hold` (closed by the test), so all stay
  // alive while they are looked for.
  int hold[2];
  int report[2];
  REQUIRE(::pipe(hold) == 0);
  REQUIRE(::pipe(report) == 0);
  auto wait_for_hold = [&] {
    ::close(hold[1]);
    char byte;
    while (::read(hold[0], &byte, 1) > 0) {
    }
    ::_exit(0);
  };
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    const pid_t grandchild = ::fork();
    if (grandchild == 0) wait_for_hold();
    (void)!::write(report[1], &grandchild, sizeof grandchild);
    wait_for_hold();
  }
  pid_t grandchild = 0;
  REQUIRE(::read(report[0], &grandchild, sizeof grandchild) == sizeof grandchild);
  // A child forked by another thread is on that thread's list.
  pid_t from_thread = -1;
  std::thread([&] {
    from_thread = ::fork();
    if (from_thread == 0) wait_for_hold();
  }).join();
  REQUIRE(from_thread > 0);
  const pid_t zombie = ::fork();
  REQUIRE(zombie >= 0);
  if (zombie == 0) ::_exit(0);
  for (int i = 0; i < 200 && process_start_ticks(zombie) != 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));

  auto found = descendants_of(::getpid());
  std::ranges::sort(found);
  std::vector<pid_t> expected{child, grandchild, from_thread};
  std::ranges::sort(expected);
  CHECK(found == expected);
  CHECK(descendants_of(child) == std::vector<pid_t>{grandchild});
  CHECK(descendants_of(grandchild).empty());

  ::close(hold[0]);
  ::close(hold[1]);
  ::close(report[0]);
  ::close(report[1]);
  for (const pid_t pid : {child, from_thread, zombie}) ::waitpid(pid, nullptr, 0);
  // The grandchild ends by itself now; with the child gone it is init's, or
  // ours where an earlier test made this process a subreaper: reap it then.
  for (int i = 0; i < 200 && process_start_ticks(grandchild) != 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ::waitpid(grandchild, nullptr, WNOHANG);
}

TEST_CASE("proc_stat numbers the fields as proc(5) does, whatever the command name") {
  const auto self = proc_stat(::getpid());
  REQUIRE(self.size() > 22);
  CHECK(self[0] == std::to_string(::getpid()));
  CHECK(self[3] == std::to_string(::getppid()));
  // A name with spaces and ')' in it does not shift the fields.
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::prctl(PR_SET_NAME, "a) b (c");
    ::pause();
    ::_exit(0);
  }
  std::vector<std::string> fields;
  for (int i = 0; i < 200; ++i) {
    fields = proc_stat(child);
    if (fields.size() > 3 && fields[1] == "a) b (c") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  REQUIRE(fields.size() > 22);
  CHECK(fields[1] == "a) b (c");
  CHECK(fields[3] == std::to_string(::getpid()));
  CHECK(proc_stat(child).empty());
}

TEST_CASE("raise_descriptor_limit takes the hard limit as the soft one") {
  // In a child: the limits set here (a lowered hard limit) cannot be undone.
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    rlimit limit{};
    if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) ::_exit(2);
    limit.rlim_max = std::min<rlim_t>(limit.rlim_max, 4096);
    limit.rlim_cur = 256;
    if (::setrlimit(RLIMIT_NOFILE, &limit) != 0 || descriptor_limit() != 256) ::_exit(3);
    raise_descriptor_limit();
    ::_exit(descriptor_limit() == limit.rlim_max ? 0 : 1);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

TEST_CASE("find_on_path gives the program's path as execvp would find it") {
  const auto sh = find_on_path("sh");
  CHECK(sh.ends_with("/sh"));
  CHECK(::access(sh.c_str(), X_OK) == 0);
  CHECK(find_on_path("dlaunch-no-such-program").empty());
  CHECK(find_on_path("tmp").empty());  // a directory is not a program
}
