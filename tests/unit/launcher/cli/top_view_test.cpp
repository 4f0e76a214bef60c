#include "launcher/cli/top_view.h"

#include <doctest/doctest.h>

using namespace dlaunch;

namespace {

HostCheck host(std::string name, std::string address, std::vector<proto::GpuFact> gpus) {
  HostCheck h;
  h.name = std::move(name);
  h.address = std::move(address);
  h.up = true;
  h.facts = proto::HostFacts{};
  h.facts->gpus = std::move(gpus);
  return h;
}

proto::GpuFact gpu(std::string job, std::int32_t util = -1) {
  return {"NVIDIA H100 80GB HBM3", 80ULL << 30, 1ULL << 30, util, std::move(job)};
}

Job job(std::string name, JobStatus status, std::vector<std::string> hosts, int ranks) {
  Job j;
  j.info.name = std::move(name);
  j.info.mode = "hosts";
  j.info.hosts = hosts;
  j.status = status;
  for (std::size_t i = 0; i < hosts.size(); ++i)
    j.info.nodes.push_back(
        {hosts[i], static_cast<int>(i), 0, ranks / static_cast<int>(hosts.size()), 0, "running"});
  return j;
}

RankSample rank_sample(std::string job, std::string rank, int pid, std::string host,
                       std::optional<int> gpu, double cpu = 12.5) {
  RankSample s;
  s.job = std::move(job);
  s.rank = std::move(rank);
  s.pid = pid;
  s.host = std::move(host);
  s.gpu = gpu;
  s.cpu_pct = cpu;
  s.rss_bytes = 100LL << 20;
  s.command = "python3";
  return s;
}

}  // namespace

TEST_CASE("top node: Arena's columns and its cluster lines; no GPUs is 0/0 (0%)") {
  CheckResult r;
  r.hosts = {host("h1", "198.18.5.1", {}), host("h2", "198.18.5.2", {})};
  CHECK(format_top_node_text(r, false) ==
        "NAME  IPADDRESS   ROLE    STATUS  GPU(Total)  GPU(Allocated)\n"
        "h1    198.18.5.1  master  ready   0           0\n"
        "h2    198.18.5.2  worker  ready   0           0\n" +
            std::string(89, '-') +
            "\n"
            "Allocated/Total GPUs: 0/0 (0%)\n");
}

TEST_CASE("top node: GPUs held by jobs count as allocated; a host that is down is notready") {
  CheckResult r;
  r.hosts = {host("gpu1", "10.0.0.1", {gpu("train", 87), gpu(""), gpu("train"), gpu("")}),
             host("gpu2", "10.0.0.2", {gpu(""), gpu("")})};
  HostCheck down;
  down.name = "gpu3";
  down.address = "10.0.0.3";
  down.error = "its agent did not join within 60 s";
  r.hosts.push_back(down);
  CHECK(allocated_gpus(*r.hosts[0].facts) == 2);
  CHECK(allocated_text(2, 6) == "2/6 (33%)");
  CHECK(allocated_text(0, 0) == "0/0 (0%)");
  const auto text = format_top_node_text(r, false);
  CHECK(text.find("gpu1  10.0.0.1   master  ready     4           2\n") != std::string::npos);
  CHECK(text.find("gpu3  10.0.0.3   worker  notready  -           -\n") != std::string::npos);
  CHECK(text.find("Allocated/Total GPUs: 2/6 (33%)\n") != std::string::npos);
  CHECK(text.find("notready: gpu3: its agent did not join within 60 s\n") != std::string::npos);

  const auto details = format_top_node_text(r, true);
  CHECK(details.find("NAME:       gpu1\n") != std::string::npos);
  CHECK(details.find("Allocated GPUs In Node gpu1:  2 (50%)\n") != std::string::npos);
  CHECK(details.find("  INDEX  NAME                   UTIL  MEMORY(Used/Total)  JOB\n"
                     "  0      NVIDIA H100 80GB HBM3  87%   1.0 GiB/80.0 GiB    train\n"
                     "  1      NVIDIA H100 80GB HBM3  -     1.0 GiB/80.0 GiB    -\n") !=
        std::string::npos);
  CHECK(details.find("REASON:     its agent did not join within 60 s\n") != std::string::npos);
  CHECK(
      details.ends_with("Allocated/Total GPUs: 2/6 (33%)\n\n"
                        "notready: gpu3: its agent did not join within 60 s\n"));

  const auto json = format_top_node_json(r);
  CHECK(json.find("\"gpus_total\":6,\"gpus_allocated\":2,\"allocated_pct\":33}") !=
        std::string::npos);
  CHECK(json.find("{\"index\":0,\"name\":\"NVIDIA H100 80GB HBM3\",\"memory_bytes\":85899345920,"
                  "\"memory_used_bytes\":1073741824,\"utilization_pct\":87,\"job\":\"train\"}") !=
        std::string::npos);
  CHECK(json.find("\"utilization_pct\":null,\"job\":null") != std::string::npos);
  CHECK(json.find("\"status\":\"notready\",\"error\":\"its agent did not join within 60 s\"") !=
        std::string::npos);
}

TEST_CASE("top node: an error that names its host already is not prefixed twice") {
  CheckResult r;
  HostCheck down;
  down.name = "gone";
  down.address = "127.0.0.1";
  down.error = "gone: cannot connect to 127.0.0.1:22: Connection refused";
  r.hosts.push_back(down);
  CHECK(format_top_node_text(r, false).ends_with(
      "\nnotready: gone: cannot connect to 127.0.0.1:22: Connection refused\n"));
}

TEST_CASE("top job: usage of the ranks here; GPUs by distinct host and index; other hosts") {
  TopJobs top;
  top.host_name = "head";
  top.jobs = {job("train", JobStatus::running, {"head", "gpu2", "gpu3"}, 6),
              job("idle", JobStatus::pending, {"gpu2"}, 2)};
  top.ranks = {rank_sample("train", "1", 300, "head", 1), rank_sample("train", "0", 200, "head", 0),
               rank_sample("train", "0", 201, "head", 0),  // a child of rank 0: same GPU
               rank_sample("other", "", 50, "", std::nullopt)};
  const auto u = job_usage(top, top.jobs[0]);
  CHECK(u.processes == 3);
  CHECK(u.gpus == 2);
  CHECK(u.cpu_pct == doctest::Approx(37.5));
  CHECK(u.rss_bytes == 300LL << 20);
  CHECK(u.other_hosts == std::vector<std::string>{"gpu2", "gpu3"});
  const auto idle = job_usage(top, top.jobs[1]);
  CHECK(!idle.gpus);
  CHECK(idle.processes == 0);

  const auto text = format_top_job_text(top);
  CHECK(text.starts_with(
      "NAME   STATUS   HOSTS  RANKS  GPUS  CPU%  MEMORY\n"
      "train  RUNNING  3      6      2     37.5  300 MiB\n"
      "idle   PENDING  1      2      -     -     -\n\n"
      "JOB                           RANK      PID    CPU%    RSS MiB  COMMAND\n"
      "other                            -       50    12.5      100.0  python3\n"
      "train                            0      200    12.5      100.0  python3\n"
      "train                            0      201    12.5      100.0  python3\n"
      "train                            1      300    12.5      100.0  python3\n"));
  CHECK(
      text.ends_with("\n(train: ranks on other hosts are not sampled: gpu2, gpu3)\n"
                     "(idle: ranks on other hosts are not sampled: gpu2)\n"));

  const auto json = format_top_job_json(top);
  CHECK(json.find(
            "{\"name\":\"train\",\"status\":\"RUNNING\",\"hosts\":[\"head\",\"gpu2\",\"gpu3\"],"
            "\"ranks\":6,\"processes\":3,\"gpus\":2,\"cpu_pct\":37.5,\"memory_bytes\":314572800,"
            "\"hosts_not_sampled\":[\"gpu2\",\"gpu3\"]}") != std::string::npos);
  CHECK(json.find("\"gpus\":null") != std::string::npos);
  CHECK(json.find("{\"job\":\"other\",\"rank\":null,\"pid\":50,\"host\":\"\"") !=
        std::string::npos);
}

TEST_CASE("top job: a host named by a local rank, loopback and standalone jobs are here") {
  TopJobs top;
  top.jobs = {job("local", JobStatus::running, {"node0", "node1", "127.0.0.1"}, 3)};
  top.ranks = {rank_sample("local", "0", 10, "node0", std::nullopt)};
  CHECK(job_usage(top, top.jobs[0]).other_hosts == std::vector<std::string>{"node1"});
  top.jobs[0].info.mode = "standalone";
  CHECK(job_usage(top, top.jobs[0]).other_hosts.empty());
  // No GPUs here: the ranks hold none, which is known.
  CHECK(job_usage(top, top.jobs[0]).gpus == 0);
  top.jobs.clear();
  top.ranks.clear();
  CHECK(format_top_job_text(top) ==
        "no running jobs\n\nno ranks of any dlaunch job on this machine\n");
}

TEST_CASE("top job: ranks of jobs without a row (another state dir's) are left out and named") {
  TopJobs top;
  top.log_dir = "/state";
  top.jobs = {job("train", JobStatus::running, {"localhost"}, 1)};
  top.ranks = {rank_sample("train", "0", 200, "localhost", 0),
               rank_sample("elsewhere", "0", 50, "localhost", std::nullopt)};
  keep_ranks_of_listed_jobs(top);
  REQUIRE(top.ranks.size() == 1);
  CHECK(top.ranks[0].job == "train");
  const auto text = format_top_job_text(top);
  CHECK(text.find("elsewhere      ") == std::string::npos);
  CHECK(
      text.ends_with("(ranks of jobs not running in /state are not shown: elsewhere; "
                     "--log-dir or DLAUNCH_STATE_DIR names another state dir)\n"));
}

TEST_CASE("top job: a manual-mode node's own record has its job's ranks here") {
  TopJobs top;
  top.log_dir = "/state";
  top.host_name = "gpu-b";
  auto node1 = job("train.node1", JobStatus::running, {"gpu-b"}, 2);
  node1.info.node_of_job = "train";  // its ranks carry DLAUNCH_JOB=train
  top.jobs = {node1};
  top.ranks = {rank_sample("train", "2", 300, "gpu-b", 0),
               rank_sample("train", "3", 301, "gpu-b", 1)};
  keep_ranks_of_listed_jobs(top);
  CHECK(top.ranks.size() == 2);
  const JobUsage u = job_usage(top, node1);
  CHECK(u.processes == 2);
  CHECK(u.gpus == 2);
  CHECK(u.other_hosts.empty());
}
