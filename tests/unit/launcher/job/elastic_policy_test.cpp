// Elastic jobs through JobPolicy: spares, MIN:MAX, and the rounds that replace
// a lost node, played on FakeJob (membership's own rules: membership_test).
#include <doctest/doctest.h>

#include <algorithm>

#include "fake_job.h"

using namespace dlaunch;
using dlaunch::testing::FakeJob;

namespace {

// Fires timers until restart round `round` has begun (at once when no
// backoff holds it).
void wait_for_round(FakeJob& job, int round) {
  while (job.policy().round() < round) {
    if (!job.fire_next_timer()) FAIL("round " << round << " never began");
  }
}

bool printed_line(const std::string& printed, const std::string& line) {
  return printed.find("dlaunch: " + line + "\n") != std::string::npos;
}

}  // namespace

TEST_CASE("elastic: a spare takes node 1's rank when its agent is lost; ranks keep their numbers") {
  FakeJob job({.nodes = 4, .nproc = 2, .max_restarts = 2, .spares = {3}});
  job.start();
  job.join_all();
  // Three nodes run ranks; the spare was told nothing.
  for (int node = 0; node < 3; ++node) {
    const auto assigned = job.received_of<proto::Assign>(node);
    REQUIRE(assigned.size() == 1);
    CHECK(assigned[0].node_rank == node);
    CHECK(assigned[0].nnodes == 3);
    CHECK(assigned[0].world_size == 6);
  }
  CHECK(job.received_of<proto::Assign>(3).empty());
  CHECK(job.policy().status() == JobStatus::running);

  // Node 1's agent is killed: its connection drops.
  job.printed();
  job.connection_lost(1, "connection reset");
  const std::string lost = job.printed();
  CHECK(printed_line(lost,
                     "lost the agent of host1: connection reset; a new round without it "
                     "(restart 1 of 2)"));
  // A round that replaces a lost node is no crash loop: it begins at once,
  // without a backoff.
  const auto lost_at = job.now();
  job.agent_done(0);
  job.agent_done(2);
  CHECK(job.policy().round() == 1);
  CHECK(job.now() == lost_at);
  CHECK_FALSE(job.armed(JobTimer::restart_backoff));
  CHECK(printed_line(job.printed(),
                     "host3 takes node 1 of host1 (lost the agent of host1: "
                     "connection reset)"));
  const auto spare = job.received_of<proto::Assign>(3);
  REQUIRE(spare.size() == 1);
  CHECK(spare[0].node_rank == 1);
  CHECK(spare[0].rank_offset == 2);
  CHECK(spare[0].round == 1);
  CHECK(spare[0].world_size == 6);
  // The others keep their node ranks and rank offsets.
  CHECK(job.received_of<proto::Assign>(2).back().rank_offset == 4);
  CHECK(job.received_of<proto::Assign>(1).size() == 1);  // the lost host: nothing more
  CHECK(job.log_round() == 1);  // the ranks' output goes to round 1's files

  // The spare's ranks report as ranks 2 and 3; the job succeeds.
  for (int rank : {0, 1}) job.rank_exits_on(0, rank, 0);
  for (int rank : {2, 3}) job.rank_exits_on(3, rank, 0);
  for (int rank : {4, 5}) job.rank_exits_on(2, rank, 0);
  for (int node : {0, 2, 3}) job.agent_done(node);
  for (int node : {0, 2, 3}) job.agent_stops(node);
  job.agent_exits(1, 137);
  REQUIRE(job.exit_code.has_value());
  CHECK(*job.exit_code == 0);
  const auto records = job.policy().node_records();
  CHECK(records[1].state == "retired");
  CHECK(records[3].node_rank == 1);
  // The job record's history: the loss in round 0, then round 1's roster.
  const auto& history = job.policy().history();
  REQUIRE(history.size() == 3);
  CHECK(history[0] == std::pair<int, std::string>{0, "lost the agent of host1: connection reset"});
  CHECK(history[1].first == 1);
  CHECK(history[1].second.find("host3 takes node 1 of host1") == 0);
  CHECK(history[2] == std::pair<int, std::string>{1, "round 1 runs on 3 nodes"});
}

TEST_CASE("elastic: --nnodes 2:3 with one host that never comes starts on 2 at the join timeout") {
  FakeJob job({.nodes = 3, .nproc = 1, .min_nodes = 2, .max_nodes = 3});
  job.start();
  job.join(0);
  job.join(2);
  CHECK(job.received_of<proto::Assign>(0).empty());  // waits for host1 up to --join-timeout
  REQUIRE(job.armed(JobTimer::join).has_value());
  CHECK(*job.armed(JobTimer::join) == std::chrono::seconds(30));
  while (auto fired = job.fire_next_timer()) {
    if (*fired == JobTimer::join) break;
  }
  CHECK(printed_line(job.printed(), "starting on 2 nodes (2 to 3); not joined: host1"));
  const auto node0 = job.received_of<proto::Assign>(0);
  const auto node1 = job.received_of<proto::Assign>(2);
  REQUIRE(node0.size() == 1);
  REQUIRE(node1.size() == 1);
  CHECK(node1[0].node_rank == 1);
  CHECK(node1[0].nnodes == 2);
  CHECK(node1[0].world_size == 2);
}

TEST_CASE("elastic: below MIN after a loss, the job fails naming the lost hosts") {
  FakeJob job({.nodes = 3, .nproc = 1, .max_restarts = 3, .min_nodes = 3, .max_nodes = 3});
  // MIN = MAX = every host, no spare: not elastic, the loss ends the job as before.
  job.start();
  job.join_all();
  // Every host runs ranks at once, although --nnodes 3:3 held the rendezvous.
  for (int node = 0; node < 3; ++node) CHECK(job.received_of<proto::Assign>(node).size() == 1);
  job.connection_lost(2, "heartbeat timeout");
  CHECK(job.printed().find("job job failed: lost the agent of node 2 (host2): heartbeat timeout") !=
        std::string::npos);

  FakeJob two({.nodes = 3, .nproc = 1, .max_restarts = 3, .min_nodes = 2, .max_nodes = 3});
  two.start();
  two.join_all();
  two.connection_lost(2, "heartbeat timeout");
  two.agent_done(0);
  two.agent_done(1);
  wait_for_round(two, 1);
  CHECK(two.received_of<proto::Assign>(1).back().nnodes == 2);
  two.printed();
  // The next round would be one node: the loss ends the job at once, and no
  // round is announced or counted for it.
  two.connection_lost(1, "link down");
  const std::string printed = two.printed();
  CHECK(printed.find("job job failed: lost the agent of host1: link down; cannot go on: 1 nodes "
                     "are left, fewer than the 2 the job needs; retired: host1 (lost the agent "
                     "of host1: link down), host2 (lost the agent of host2: heartbeat "
                     "timeout)") != std::string::npos);
  CHECK(printed.find("a new round without it") == std::string::npos);
  CHECK(two.policy().result().restarts == 1);
  two.agent_stops(0);
  two.agent_exits(1, 1);
  two.agent_exits(2, 1);
  REQUIRE(two.exit_code.has_value());
  CHECK(*two.exit_code == 1);
}

// The checkpoint files that reached `node`, in the order they came.
std::vector<proto::FileChunk> checkpoint_chunks(FakeJob& job, int node) {
  std::vector<proto::FileChunk> chunks;
  for (auto& chunk : job.received_of<proto::FileChunk>(node)) {
    if (chunk.set == proto::FileSet::checkpoint) chunks.push_back(chunk);
  }
  return chunks;
}

TEST_CASE(
    "--checkpoint-dir: a new node 0 gets the checkpoint before its Assign; an old one does not") {
  FakeJob job({.nodes = 4,
               .nproc = 1,
               .max_restarts = 3,
               .spares = {3},
               .min_nodes = 2,
               .max_nodes = 3,
               .carry_checkpoint = true});
  job.start();
  job.join_all();
  // Rank 0 saves a checkpoint: the coordinator keeps a copy.
  job.rank0_saves_checkpoint(0, "step-100.pt", "weights at step 100");
  for (int node = 0; node < 4; ++node) CHECK(checkpoint_chunks(job, node).empty());

  // Node 1 is lost: node 0 stays, so the checkpoint is already there.
  job.connection_lost(1, "connection reset");
  job.agent_done(0);
  job.agent_done(2);
  wait_for_round(job, 1);
  CHECK(job.received_of<proto::Assign>(3).back().node_rank == 1);
  for (int node = 0; node < 4; ++node) CHECK(checkpoint_chunks(job, node).empty());

  // Node 0 is lost and no spare is left: the nodes after it move up, so host3
  // becomes node 0, and the checkpoint goes to it before its Assign.
  job.printed();
  job.connection_lost(0, "heartbeat timeout");
  job.agent_done(2);
  job.agent_done(3);
  wait_for_round(job, 2);
  const auto carried = checkpoint_chunks(job, 3);
  REQUIRE(carried.size() == 1);
  CHECK(carried[0].path == "step-100.pt");
  CHECK(carried[0].data == "weights at step 100");
  CHECK(carried[0].complete);
  const auto& inbox = job.received(3);
  const auto chunk_at = std::find_if(inbox.begin(), inbox.end(), [](const proto::Message& m) {
    return std::holds_alternative<proto::FileChunk>(m);
  });
  REQUIRE(chunk_at != inbox.end());
  REQUIRE(chunk_at + 1 != inbox.end());
  const auto* assign = std::get_if<proto::Assign>(&*(chunk_at + 1));
  REQUIRE(assign != nullptr);  // the next message it gets is the new round's Assign
  CHECK(assign->node_rank == 0);
  CHECK(assign->round == 2);
  CHECK(printed_line(job.printed(),
                     "host3 is the new node 0: sent it the last checkpoint (1 file, 19 B, 0.0 s)"));
  CHECK(checkpoint_chunks(job, 2).empty());
}

TEST_CASE("without --checkpoint-dir nothing is carried") {
  FakeJob job({.nodes = 3, .nproc = 1, .max_restarts = 2, .spares = {2}});
  job.start();
  job.join_all();
  job.rank0_saves_checkpoint(0, "step-100.pt", "weights at step 100");
  job.connection_lost(0, "connection reset");
  job.agent_done(1);
  wait_for_round(job, 1);
  CHECK(job.received_of<proto::Assign>(2).back().node_rank == 0);
  for (int node = 0; node < 3; ++node) CHECK(checkpoint_chunks(job, node).empty());
}

TEST_CASE("elastic: a host that joins after the start is a spare for the next round") {
  FakeJob job({.nodes = 3, .nproc = 1, .max_restarts = 2, .min_nodes = 2, .max_nodes = 3});
  job.start();
  job.join(0);
  job.join(1);
  while (auto fired = job.fire_next_timer()) {
    if (*fired == JobTimer::join) break;
  }
  REQUIRE(job.received_of<proto::Assign>(1).size() == 1);
  job.printed();
  // host2 arrives while round 0 runs: taken, told nothing yet.
  job.join(2);
  CHECK(printed_line(job.printed(), "host2 joined after the start: a spare for the next round"));
  CHECK(job.received_of<proto::Reject>(2).empty());
  CHECK(job.received_of<proto::Assign>(2).empty());
  // Node 1 is lost: host2 takes its place, and the world is 3 nodes' no more
  // than MAX allows.
  job.connection_lost(1, "connection reset");
  job.agent_done(0);
  wait_for_round(job, 1);
  const auto late = job.received_of<proto::Assign>(2);
  REQUIRE(late.size() == 1);
  CHECK(late[0].node_rank == 1);
  CHECK(late[0].round == 1);
  CHECK(late[0].world_size == 2);
}

TEST_CASE(
    "elastic with --sync: a host that joins after the start gets the files before it is used") {
  FakeJob job(
      {.nodes = 4, .nproc = 1, .max_restarts = 3, .sync = true, .min_nodes = 2, .max_nodes = 3});
  job.start();
  for (int node : {0, 1}) {
    job.join(node);
    job.sync_done(node);
  }
  while (auto fired = job.fire_next_timer()) {
    if (*fired == JobTimer::join) break;
  }
  REQUIRE(job.received_of<proto::Assign>(1).size() == 1);
  // Two hosts arrive while round 0 runs: their transfers start at once.
  job.join(2);
  job.join(3);
  CHECK(job.sync_started == std::vector<int>{0, 1, 2, 3});
  // host2's fails (a full disk): the job goes on, and host2 is never used.
  job.printed();
  job.sync_done(2, "data/x: No space left on device");
  CHECK(job.policy().status() == JobStatus::running);
  CHECK(job.printed().find("--sync to host2 failed: data/x: No space left on device; it "
                           "joined after the start and is not used") != std::string::npos);
  job.sync_done(3);
  // Node 1 is lost: host3, whose files are in place, takes its place.
  job.connection_lost(1, "connection reset");
  job.agent_done(0);
  wait_for_round(job, 1);
  CHECK(job.received_of<proto::Assign>(2).empty());
  const auto late = job.received_of<proto::Assign>(3);
  REQUIRE(late.size() == 1);
  CHECK(late[0].node_rank == 1);
  CHECK(late[0].round == 1);
}
