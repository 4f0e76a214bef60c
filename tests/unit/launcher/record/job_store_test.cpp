#include "launcher/record/job_store.h"
#include "tests/unit/scratch_dir.h"

#include "common/posix.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

using namespace dlaunch;

namespace {

struct StateDir : dlaunch::testing::ScratchDir {
  std::string add(const std::string& name, long long started, long long pid,
                  std::optional<JobResult> result = std::nullopt,
                  JobStatus status = JobStatus::running) {
    const std::string job_dir = (dir() / name).string();
    std::filesystem::create_directories(job_dir);
    JobInfo info;
    info.name = name;
    info.mode = "standalone";
    info.command = {"prog", "--flag"};
    info.coordinator_pid = pid;
    info.coordinator_start_ticks = process_start_ticks(static_cast<pid_t>(pid));
    info.started = started;
    info.status = status;
    REQUIRE(write_job_record(job_dir, info, result ? &*result : nullptr).ok());
    return job_dir;
  }
};

JobResult finished_with(int code, long long finished = 0) {
  JobResult r;
  r.exit_code = code;
  r.finished = finished;
  return r;
}

// A pid that is surely not running: past the largest pid Linux hands out.
constexpr long long kDeadPid = 1LL << 30;

}  // namespace

TEST_CASE("a job's status comes from its result, else its record and its coordinator") {
  JobInfo info;
  CHECK(decide_job_status(info, finished_with(0), false) == JobStatus::succeeded);
  CHECK(decide_job_status(info, finished_with(9), false) == JobStatus::failed);
  // A rank that exits 130 or 143 by itself failed; only dlaunch being stopped
  // is a stop.
  CHECK(decide_job_status(info, finished_with(130), false) == JobStatus::failed);
  CHECK(decide_job_status(info, finished_with(143), true) == JobStatus::failed);
  auto stopped = finished_with(130);
  stopped.interrupted = true;
  CHECK(decide_job_status(info, stopped, false) == JobStatus::stopped);
  for (auto active : {JobStatus::pending, JobStatus::running, JobStatus::restarting}) {
    info.status = active;
    CHECK(decide_job_status(info, std::nullopt, true) == active);
    // Its coordinator is gone (killed with -9, the machine rebooted).
    CHECK(decide_job_status(info, std::nullopt, false) == JobStatus::lost);
  }
}

TEST_CASE("a job's duration runs to its end, or to now; a lost job has none") {
  Job job;
  job.info.started = 100;
  job.status = JobStatus::running;
  CHECK(job_duration(job, 160) == 60);
  job.result = finished_with(0, 130);
  job.status = JobStatus::succeeded;
  CHECK(job_duration(job, 1000) == 30);
  job.result.reset();
  job.status = JobStatus::lost;
  CHECK(job_duration(job, 1000) == -1);
}

TEST_CASE("load_jobs reads every job under the state dir, newest first") {
  StateDir state;
  state.add("b-done", 200, kDeadPid, finished_with(0, 210));
  state.add("a-live", 300, ::getpid());  // this test binary, with its start time
  state.add("c-lost", 100, kDeadPid);
  std::filesystem::create_directories(state.dir() / "not-a-job");
  std::ofstream(state.dir() / "stray-file") << "x";

  const auto jobs = load_jobs(state.path());
  REQUIRE(jobs.size() == 3);
  CHECK(jobs[0].info.name == "a-live");
  CHECK(jobs[0].status == JobStatus::running);
  CHECK(jobs[0].info.command == std::vector<std::string>{"prog", "--flag"});
  CHECK(jobs[1].info.name == "b-done");
  CHECK(jobs[1].status == JobStatus::succeeded);
  CHECK(jobs[2].info.name == "c-lost");
  CHECK(jobs[2].status == JobStatus::lost);

  CHECK(load_jobs((state.dir() / "missing").string()).empty());
}

TEST_CASE("find_job takes a job's name, never a path") {
  StateDir state;
  state.add("job-1", 100, kDeadPid, finished_with(3, 101));
  auto job = find_job(state.path(), "job-1");
  REQUIRE(job);
  CHECK(job->status == JobStatus::failed);
  CHECK(job->dir == (state.dir() / "job-1").string());
  CHECK_FALSE(find_job(state.path(), "job-2").has_value());
  CHECK_FALSE(find_job(state.path(), "../" + state.dir().filename().string() + "/job-1"));
}

TEST_CASE("rank_logs finds rank-<R>.log files by rank number") {
  StateDir state;
  const std::string dir = state.add("job", 100, kDeadPid);
  for (const char* name : {"rank-0.log", "rank-10.log", "rank-2.log", "rank-x.log", "other.log"}) {
    std::ofstream(std::filesystem::path(dir) / name) << "line\n";
  }
  const auto logs = rank_logs(dir);
  REQUIRE(logs.size() == 3);
  CHECK(logs.begin()->first == 0);
  CHECK(logs.rbegin()->first == 10);
  CHECK(logs.at(2) == dir + "/rank-2.log");
  // After restarts: the latest round's file is the rank's log.
  for (const char* name : {"rank-2.1.log", "rank-2.3.log"})
    std::ofstream(std::filesystem::path(dir) / name) << "line\n";
  CHECK(rank_logs(dir).at(2) == dir + "/rank-2.3.log");
  CHECK(rank_log_rounds(dir).at(2).size() == 3);
}

TEST_CASE("job store: a cut-short result is never a success") {
  StateDir dir;
  const std::string job_dir = dir.add("cut", 100, kDeadPid);
  std::ofstream(job_dir + "/job.toml", std::ios::app) << "[result]\nroot_cause = 'x'\n";
  const auto job = load_job(job_dir);
  REQUIRE(job.has_value());
  CHECK_FALSE(job->result.has_value());
  CHECK(job->status == JobStatus::lost);
}

TEST_CASE("job store: a reused pid is not the coordinator") {
  StateDir state;
  // This test binary's pid with another start time: the pid was reused.
  const std::string dir = state.add("reused", 100, ::getpid());
  auto info = read_job_info(dir);
  REQUIRE(info);
  CHECK(coordinator_alive(*info));
  info->coordinator_start_ticks += 1;
  CHECK_FALSE(coordinator_alive(*info));
  // An old record without a start time: only a process named dlaunch counts.
  info->coordinator_start_ticks = 0;
  CHECK_FALSE(coordinator_alive(*info));
}

TEST_CASE("a record's coordinator is here, rebooted away, or on another machine") {
  JobInfo info;
  info.coordinator_host = "a1";
  info.coordinator_boot = "boot-1";
  CHECK(coordinator_place(info, "a1", "boot-1") == CoordinatorPlace::here);
  CHECK(coordinator_place(info, "a1", "boot-2") == CoordinatorPlace::rebooted);
  CHECK(coordinator_place(info, "b7", "boot-2") == CoordinatorPlace::elsewhere);
  // Records from before machines were written, and a machine whose boot id
  // cannot be read, look the pid up here as before.
  JobInfo old;
  CHECK(coordinator_place(old, "b7", "boot-2") == CoordinatorPlace::here);
  CHECK(coordinator_place(info, "b7", "") == CoordinatorPlace::here);
  // Another boot with no machine named: taken for this one's.
  info.coordinator_host.clear();
  CHECK(coordinator_place(info, "b7", "boot-2") == CoordinatorPlace::rebooted);
}
