#include "launcher/record/job_claim.h"
#include "tests/unit/scratch_dir.h"

#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "common/posix.h"
#include "launcher/record/job_store.h"

using namespace dlaunch;
namespace fs = std::filesystem;

namespace {

// A PENDING record whose coordinator is this test process (alive).
JobInfo live_info(long long started = 1000) {
  JobInfo info;
  info.mode = "standalone";
  info.command = {"prog"};
  info.coordinator_pid = ::getpid();
  info.coordinator_start_ticks = process_start_ticks(::getpid());
  info.started = started;
  info.status = JobStatus::pending;
  return info;
}

}  // namespace

TEST_CASE("an unnamed job's taken name gets -2, -3") {
  dlaunch::testing::ScratchDir state;
  const std::string dir = state.path();
  for (const char* expected : {"prog-1", "prog-1-2", "prog-1-3"}) {
    auto result = claim_job(dir, "prog-1", NameRule::numbered, live_info());
    REQUIRE(result);
    CHECK(result->name == expected);
    CHECK(read_job_info(dir + "/" + expected)->name == expected);
  }
}

TEST_CASE("a node's name is reused once its last run ended, and numbered while one runs") {
  dlaunch::testing::ScratchDir state;
  const std::string dir = state.path();
  JobInfo ended = live_info(1700000000);
  ended.coordinator_pid = 1 << 30;  // gone: the record reads LOST
  REQUIRE(claim_job(dir, "j.node-h", NameRule::exact_unless_active, ended));
  auto again = claim_job(dir, "j.node-h", NameRule::exact_unless_active, live_info());
  REQUIRE(again);
  CHECK(again->name == "j.node-h");
  CHECK(again->archived_as.starts_with("j.node-h."));
  // The second, while that one runs, takes the next free number.
  auto second = claim_job(dir, "j.node-h", NameRule::exact_unless_active, live_info());
  REQUIRE(second);
  CHECK(second->name == "j.node-h-2");
  CHECK(second->archived_as.empty());
}

TEST_CASE("a name held by an active job is refused, naming its pid and status") {
  dlaunch::testing::ScratchDir state;
  const std::string dir = state.path();
  REQUIRE(claim_job(dir, "nightly", NameRule::exact, live_info()));
  auto again = claim_job(dir, "nightly", NameRule::exact, live_info());
  REQUIRE_FALSE(again);
  REQUIRE(again.error().taken);
  CHECK(again.error().taken->coordinator_pid == ::getpid());
  CHECK(again.error().taken->status == JobStatus::pending);
}

TEST_CASE("a finished or lost job of the same name is moved aside for the new run") {
  dlaunch::testing::ScratchDir state;
  const std::string dir = state.path();
  JobInfo old = live_info(1700000000);
  old.coordinator_pid = 1 << 30;  // gone: the record reads LOST
  REQUIRE(claim_job(dir, "nightly", NameRule::exact, old));
  std::ofstream(dir + "/nightly/rank-0.log") << "old run\n";

  auto result = claim_job(dir, "nightly", NameRule::exact, live_info(1800000000));
  REQUIRE(result);
  const auto& claimed = *result;
  CHECK(claimed.name == "nightly");
  REQUIRE(claimed.archived_as.starts_with("nightly."));
  CHECK(fs::exists(dir + "/" + claimed.archived_as + "/rank-0.log"));
  CHECK_FALSE(fs::exists(dir + "/nightly/rank-0.log"));
  CHECK(find_job(dir, "nightly")->info.started == 1800000000);
  CHECK(find_job(dir, claimed.archived_as)->status == JobStatus::lost);
}

TEST_CASE("processes racing for one name: exactly one gets it") {
  dlaunch::testing::ScratchDir state;
  const std::string dir = state.path();
  constexpr int kRacers = 8;
  std::vector<pid_t> racers;
  // Each racer claims for the test process, which outlives them all.
  const JobInfo info = live_info();
  for (int i = 0; i < kRacers; ++i) {
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      auto result = claim_job(dir, "race", NameRule::exact, info);
      ::_exit(result ? 0 : result.error().taken ? 3 : 4);
    }
    racers.push_back(pid);
  }
  int winners = 0, refused = 0;
  for (pid_t pid : racers) {
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    REQUIRE(WIFEXITED(status));
    winners += WEXITSTATUS(status) == 0;
    refused += WEXITSTATUS(status) == 3;
  }
  CHECK(winners == 1);
  CHECK(refused == kRacers - 1);
  CHECK(load_jobs(dir).size() == 1);
}

TEST_CASE("a state dir that cannot be used is an error naming the path, and nothing is taken") {
  dlaunch::testing::ScratchDir state;
  // A file where the state dir's parent must be.
  const std::string file = state.path() + "/plain-file";
  std::ofstream(file) << "x";
  auto result = claim_job(file + "/state", "job", NameRule::exact, live_info());
  REQUIRE_FALSE(result);
  CHECK_FALSE(result.error().taken);
  CHECK(result.error().error == "cannot create " + file + "/state: Not a directory");
}
