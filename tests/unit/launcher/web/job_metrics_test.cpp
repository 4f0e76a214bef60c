#include "launcher/web/job_metrics.h"

#include <doctest/doctest.h>

using namespace dlaunch;

namespace {

constexpr long long kNow = 1'800'000'000;

Job job(std::string name, JobStatus status, long long started) {
  Job j;
  j.info.name = std::move(name);
  j.info.started = started;
  j.info.nnodes = 2;
  j.status = status;
  return j;
}

}  // namespace

TEST_CASE("metrics: jobs by status, a running job's series, and GPUs held per host") {
  auto running = job("train", JobStatus::running, kNow - 100);
  running.info.nodes = {{"gpu-a", 0, 0, 8, 11, "running", 8}, {"gpu-b", 1, 8, 8, 12, "running", 8}};
  running.info.round = 1;
  auto stalled = job("quiet \"one\"", JobStatus::stalled, kNow - 50);
  stalled.info.nodes = {{"gpu-a", 0, 0, 2, 13, "running", 2}};
  auto done = job("old", JobStatus::succeeded, kNow - 1000);
  done.result = JobResult{};
  done.result->world_size = 4;
  done.result->finished = kNow - 900;
  auto ancient = job("ancient", JobStatus::failed, kNow - 5 * 86400);
  ancient.result = JobResult{};
  ancient.result->exit_code = 3;
  ancient.result->finished = kNow - 4 * 86400;

  const std::string text =
      format_job_metrics({running, stalled, done, ancient}, kNow,
                         [](const Job& j) { return j.info.name == "train" ? kNow - 7 : 0LL; });
  CHECK(text.find("# TYPE dlaunch_jobs gauge\n") != std::string::npos);
  CHECK(text.find("dlaunch_jobs{status=\"running\"} 1\n") != std::string::npos);
  CHECK(text.find("dlaunch_jobs{status=\"stalled\"} 1\n") != std::string::npos);
  CHECK(text.find("dlaunch_jobs{status=\"failed\"} 1\n") != std::string::npos);
  CHECK(text.find("dlaunch_jobs{status=\"hung\"} 0\n") != std::string::npos);
  CHECK(text.find("dlaunch_job_status{job_name=\"train\",status=\"running\"} 1\n") !=
        std::string::npos);
  CHECK(text.find("dlaunch_job_ranks{job_name=\"train\"} 16\n") != std::string::npos);
  CHECK(text.find("dlaunch_job_restarts_total{job_name=\"train\"} 1\n") != std::string::npos);
  CHECK(text.find("# TYPE dlaunch_job_restarts_total counter\n") != std::string::npos);
  CHECK(text.find("dlaunch_job_seconds_since_output{job_name=\"train\"} 7\n") != std::string::npos);
  CHECK(text.find("dlaunch_job_stalled{job_name=\"train\"} 0\n") != std::string::npos);
  // A label value with a quote is escaped as the format says.
  CHECK(text.find("dlaunch_job_stalled{job_name=\"quiet \\\"one\\\"\"} 1\n") != std::string::npos);
  CHECK(text.find("dlaunch_job_exit_code{job_name=\"old\"} 0\n") != std::string::npos);
  CHECK(text.find("dlaunch_job_ranks{job_name=\"old\"} 4\n") != std::string::npos);
  // An ended job has no liveness series; one ended days ago has none at all.
  CHECK(text.find("dlaunch_job_stalled{job_name=\"old\"}") == std::string::npos);
  CHECK(text.find("\"ancient\"") == std::string::npos);
  CHECK(text.find("dlaunch_host_gpus_allocated{host=\"gpu-a\"} 10\n") != std::string::npos);
  CHECK(text.find("dlaunch_host_gpus_allocated{host=\"gpu-b\"} 8\n") != std::string::npos);
}

TEST_CASE("metrics: a manual-mode node's own record is not counted as another job") {
  auto train = job("train", JobStatus::running, kNow - 100);
  train.info.nodes = {{"gpu-a", 0, 0, 8, 11, "running", 8}, {"gpu-b", 1, 8, 8, 12, "running", 8}};
  auto node1 = job("train.node1", JobStatus::running, kNow - 99);
  node1.info.node_of_job = "train";
  node1.info.node_name = "node1";
  node1.info.nodes = {{"gpu-b", 1, -1, 8, 12, "running", 8}};
  const std::string text = format_job_metrics({train, node1}, kNow, [](const Job&) { return 0LL; });
  CHECK(text.find("dlaunch_jobs{status=\"running\"} 1\n") != std::string::npos);
  CHECK(text.find("train.node1") == std::string::npos);
  CHECK(text.find("dlaunch_host_gpus_allocated{host=\"gpu-b\"} 8\n") != std::string::npos);
}

TEST_CASE("metrics: an empty state dir still says every status, and declares no empty family") {
  const std::string text = format_job_metrics({}, kNow, [](const Job&) { return 0LL; });
  CHECK(text.find("dlaunch_jobs{status=\"lost\"} 0\n") != std::string::npos);
  CHECK(text.find("dlaunch_job_ranks") == std::string::npos);
}
