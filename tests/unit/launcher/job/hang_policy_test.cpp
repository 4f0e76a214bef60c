// Hung jobs through the real dispatch (FakeJob: the coordinator, its hang
// watch and JobPolicy), on a clock the test moves: the stall noticed at the
// timeout, every agent asked for its ranks' stacks, the verdict, the end.
#include <doctest/doctest.h>

#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "fake_job.h"

using namespace dlaunch;
using dlaunch::testing::FakeJob;
using std::chrono::milliseconds;
using std::chrono::seconds;

namespace {

std::string waiting(int rank) {
  return "Thread 0x00007f" + std::to_string(rank) +
         " (most recent call first):\n"
         "  File \"/x/torch/distributed/distributed_c10d.py\", line 1536 in all_reduce\n"
         "  File \"/work/train.py\", line 30 in step\n";
}

// Every node answers the request it got with its ranks' reports; `state` for
// rank `odd`, waiting in the all-reduce for the others.
void answer_stacks(FakeJob& job, int nodes, int nproc, int odd, const std::string& state) {
  for (int node = 0; node < nodes; ++node) {
    const auto requests = job.received_of<proto::StacksRequest>(node);
    REQUIRE(requests.size() == 1);
    for (int local = 0; local < nproc; ++local) {
      const int rank = node * nproc + local;
      proto::StacksReport r;
      r.id = requests[0].id;
      r.rank = rank;
      r.state = rank == odd ? state : "S";
      r.sampled_ms = 300;
      r.text = rank == odd && state != "T" ? "  File \"/work/train.py\", line 12 in stuck_here\n"
                                           : waiting(rank);
      job.agent_sends(node, r);
    }
    proto::StacksReport last;
    last.id = requests[0].id;
    job.agent_sends(node, last);
  }
}

std::size_t files_in(const std::string& dir) {
  std::size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    n += e.path().filename().string().starts_with("rank-");
  return n;
}

}  // namespace

TEST_CASE(
    "1,000 ranks: a stall at --hang-timeout asks every agent, names the stopped rank, ends 124") {
  constexpr int kHungNodes = 500;
  FakeJob job({.nodes = kHungNodes, .nproc = 2, .hang_timeout = seconds(60)});
  job.start();
  job.join_all();
  REQUIRE(job.policy().status() == JobStatus::running);
  // Quiet for less than the timeout: nothing.
  job.advance(seconds(55));
  CHECK(job.received_of<proto::StacksRequest>(0).empty());
  // A line is progress: the clock starts again.
  job.rank_prints(3, "step 1");
  job.advance(seconds(55));
  CHECK(job.received_of<proto::StacksRequest>(0).empty());
  job.advance(seconds(10));
  CHECK(job.policy().status() == JobStatus::stalled);
  CHECK(job.printed().find("dlaunch: job job: no rank made progress for 60 s (no output line); "
                           "gathering every rank's stack") != std::string::npos);
  answer_stacks(job, kHungNodes, 2, 777, "T");
  const std::string printed = job.printed();
  CHECK(
      printed.find("  suspect: rank 777 on host388: stopped (state T): it takes part in nothing") !=
      std::string::npos);
  CHECK(printed.find("dlaunch: job job hung: no rank made progress for 60 s (--hang-timeout); "
                     "suspect: rank 777 on host388") != std::string::npos);
  for (int node : {0, 388, 499}) {
    const auto stops = job.received_of<proto::Stop>(node);
    REQUIRE(stops.size() == 1);
    CHECK(stops[0].exit_code == 124);
    CHECK_FALSE(stops[0].restart);
  }
  const auto stacks = std::filesystem::path(job.job_dir()) / "stacks";
  std::string dir;
  for (const auto& e : std::filesystem::directory_iterator(stacks))
    if (e.is_directory()) dir = e.path().string();
  REQUIRE_FALSE(dir.empty());
  CHECK(files_in(dir) == 1000);
  job.all_agents_stop();
  CHECK(job.exit_code == 124);
  CHECK(job.policy().status() == JobStatus::hung);
}

TEST_CASE("without --hang-timeout a stall is only said, and progress makes the job RUNNING again") {
  FakeJob job({.nodes = 3, .nproc = 2});
  job.start();
  job.join_all();
  job.advance(Options::kDefaultStallTime + seconds(10));
  CHECK(job.policy().status() == JobStatus::stalled);
  answer_stacks(job, 3, 2, 4, "S");
  CHECK(job.printed().find("  suspect: rank 4 on host2: its stack differs from the 5 ranks that "
                           "wait together (ranks 0-3,5)") != std::string::npos);
  CHECK(job.received_of<proto::Stop>(0).empty());  // left running
  job.rank_prints(0, "step 2");
  CHECK(job.policy().status() == JobStatus::running);
  CHECK(job.printed().find("dlaunch: job job made progress again: RUNNING") != std::string::npos);
}

TEST_CASE("with a spare, the hung rank's node is retired and the next round runs without it") {
  FakeJob job(
      {.nodes = 4, .nproc = 2, .max_restarts = 2, .spares = {3}, .hang_timeout = seconds(30)});
  job.start();
  job.join_all();
  job.advance(seconds(35));
  answer_stacks(job, 3, 2, 3, "S");  // rank 3 on host1
  CHECK(job.printed().find("; a new round without it (restart 1 of 2)") != std::string::npos);
  job.agent_done(0);
  job.agent_done(1);
  job.agent_done(2);
  while (job.policy().round() < 1)
    if (!job.fire_next_timer()) FAIL("the next round never began");
  CHECK(job.received_of<proto::Assign>(3).size() == 1);  // the spare runs node 1's ranks
  CHECK(job.policy().status() == JobStatus::running);
}

TEST_CASE("`dlaunch stacks -r` for 10,000 ranks names each agent only its own ranks") {
  // A StacksRequest holds at most 4,096 ranks: one naming all 10,000 would be
  // malformed, and its agent's connection closed.
  FakeJob job({.nodes = 3, .nproc = 2});
  job.start();
  job.join_all();
  std::string ranks;
  for (int r = 0; r < 10'000; ++r) ranks += (r ? "," : "") + std::to_string(r);
  {
    std::ofstream request(job.job_dir() + "/" + HangWatch::request_prefix() + "t1");
    request << ranks << "\n";
  }
  ::kill(::getpid(), SIGUSR1);
  job.advance(milliseconds(0));
  for (int node = 0; node < 3; ++node) {
    const auto requests = job.received_of<proto::StacksRequest>(node);
    REQUIRE(requests.size() == 1);
    CHECK(requests[0].ranks == std::vector<std::int32_t>{2 * node, 2 * node + 1});
  }
}
