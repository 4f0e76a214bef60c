#include "launcher/web/jobs_json_cache.h"
#include "tests/unit/scratch_dir.h"

#include <doctest/doctest.h>

#include <filesystem>

using namespace dlaunch;
using dlaunch::testing::ScratchDir;

namespace {

void write_job(const std::string& state, const std::string& name, long long started,
               int exit_code) {
  const std::string dir = state + "/" + name;
  std::filesystem::create_directories(dir);
  JobInfo info;
  info.name = name;
  info.mode = "standalone";
  info.command = {"prog"};
  info.started = started;
  info.started_ms = started * 1000;
  JobResult result;
  result.exit_code = exit_code;
  result.finished = started + 5;
  REQUIRE(write_job_record(dir, info, &result).ok());
}

}  // namespace

TEST_CASE("the jobs' JSON: newest first, a changed record read again, a deleted one gone") {
  ScratchDir state;
  write_job(state.path(), "old", 1000, 0);
  write_job(state.path(), "new", 2000, 3);
  JobsJsonCache cache;
  const std::string first = cache.jobs_array(state.path(), 3000);
  REQUIRE(first.front() == '[');
  CHECK(first.find("\"name\":\"new\"") < first.find("\"name\":\"old\""));
  CHECK(first.find("\"status\":\"FAILED\"") != std::string::npos);
  CHECK(cache.jobs_array(state.path(), 3000) == first);
  // The record rewritten (another size): read again.
  write_job(state.path(), "new", 2000, 0);
  const std::string second = cache.jobs_array(state.path(), 3000);
  CHECK(second.find("\"status\":\"FAILED\"") == std::string::npos);
  std::filesystem::remove_all(state.path() + "/old");
  const std::string third = cache.jobs_array(state.path(), 3000);
  CHECK(third.find("\"name\":\"old\"") == std::string::npos);
  CHECK(third.find("\"name\":\"new\"") != std::string::npos);
  // A directory without a record is no job.
  std::filesystem::create_directories(state.path() + "/not-a-job");
  CHECK(cache.jobs_array(state.path(), 3000) == third);
}
