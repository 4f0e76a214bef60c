#include "launcher/job/job_policy.h"
#include "protocol/agent_notes.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <csignal>

#include "fake_job.h"

using namespace dlaunch;
using dlaunch::testing::FakeJob;
using std::chrono::milliseconds;
using std::chrono::seconds;

namespace {

constexpr int kNodes = 1000;

// Every node got exactly this Stop as its last message, except those in `skip`.
void check_everyone_got(FakeJob& job, int nodes, const proto::Stop& expected,
                        const std::vector<int>& skip = {}) {
  int got = 0;
  for (int node = 0; node < nodes; ++node) {
    if (std::find(skip.begin(), skip.end(), node) != skip.end()) {
      CHECK(job.received_of<proto::Stop>(node).empty());
      continue;
    }
    const auto stops = job.received_of<proto::Stop>(node);
    REQUIRE(stops.size() == 1);
    const auto& stop = stops.back();
    CHECK(stop.exit_code == expected.exit_code);
    CHECK(stop.restart == expected.restart);
    CHECK(stop.grace_s == expected.grace_s);
    CHECK(stop.reason == expected.reason);
    ++got;
  }
  CHECK(got == nodes - static_cast<int>(skip.size()));
}

proto::Stop stop_of(int exit_code, std::string reason, bool restart = false, int grace_s = -1) {
  proto::Stop stop;
  stop.exit_code = exit_code;
  stop.restart = restart;
  stop.grace_s = grace_s;
  stop.reason = std::move(reason);
  return stop;
}

}  // namespace

TEST_CASE("a job of 1,000 nodes that succeeds ends with code 0 once every agent has exited") {
  FakeJob job({.nodes = kNodes});
  job.start();
  CHECK(job.transport.started() == kNodes);
  CHECK(job.armed(JobTimer::rendezvous) == seconds(600));

  job.join_all();
  CHECK_FALSE(job.armed(JobTimer::rendezvous));
  CHECK(
      job.has_log("info: job job: 2000 ranks on 1000 nodes, MASTER_ADDR=10.0.0.1 "
                  "MASTER_PORT=29500"));
  for (int node = 0; node < kNodes; ++node) {
    const auto assigns = job.received_of<proto::Assign>(node);
    REQUIRE(assigns.size() == 1);
    CHECK(assigns[0].rank_offset == 2 * node);
    CHECK(assigns[0].world_size == 2000);
    CHECK(assigns[0].round == 0);
  }

  job.all_ranks_exit(0);
  for (int node = 0; node + 1 < kNodes; ++node) job.agent_done(node);
  CHECK(job.received_of<proto::Stop>(0).empty());  // one node still has ranks running
  job.agent_done(kNodes - 1);
  check_everyone_got(job, kNodes, stop_of(0, ""));
  CHECK(job.armed(JobTimer::stop_deadline) == seconds(15));  // grace + 5 s

  for (int node = 0; node + 1 < kNodes; ++node) job.agent_stops(node);
  CHECK_FALSE(job.exit_code);
  job.agent_stops(kNodes - 1);
  CHECK(job.exit_code == 0);
  CHECK(job.printed().empty());
  CHECK(job.policy().result().root_cause.empty());
  CHECK(job.policy().result().world_size == 2000);
  for (int node = 0; node < kNodes; ++node) CHECK(job.transport.agent(node).kills == 0);
}

TEST_CASE("a rank's @record exception, not its last lines, is the root cause's tail") {
  FakeJob job({.nodes = 2});
  job.start();
  job.join_all();
  job.rank_prints(3, "step 2");
  job.agent_sends(1, proto::RankExit{3, 1, 0,
                                     "Traceback (most recent call last):\n  File \"t.py\", "
                                     "line 3, in step\nRuntimeError: boom\x1b[2J"});
  CHECK(job.printed() ==
        "dlaunch: job job failed: rank 3 on host1 exited with code 1\n"
        "dlaunch: the exception of rank 3 (its TORCHELASTIC_ERROR_FILE, torch's @record):\n"
        "  | Traceback (most recent call last):\n"
        "  |   File \"t.py\", line 3, in step\n"
        "  | RuntimeError: boom\\x1b[2J\n");
  CHECK(job.policy().result().root_cause_tail.back() == "RuntimeError: boom\\x1b[2J");
}

TEST_CASE("the first failure in time decides the exit code and the root cause") {
  FakeJob job({.nodes = kNodes});
  job.start();
  job.join_all();
  job.rank_prints(1501, "loading shard 1501");
  job.rank_prints(1501, "ValueError: bad batch");

  SUBCASE("an exit code passes through") {
    job.rank_exits(1501, 3);
    job.rank_exits(8, 0, SIGKILL);  // later, and a consequence: ignored
    CHECK(job.printed() ==
          "dlaunch: job job failed: rank 1501 on host750 exited with code 3\n"
          "dlaunch: last lines of rank 1501:\n"
          "  | loading shard 1501\n"
          "  | ValueError: bad batch\n");
    check_everyone_got(job, kNodes,
                       stop_of(3, "job job failed: rank 1501 on host750 exited with code 3"));
    job.all_agents_stop();
    CHECK(job.exit_code == 3);
    const auto result = job.policy().result();
    CHECK(result.exit_code == 3);
    CHECK(result.root_cause == "rank 1501 on host750 exited with code 3");
    CHECK(result.root_cause_tail ==
          std::vector<std::string>{"loading shard 1501", "ValueError: bad batch"});
  }
  SUBCASE("a signal gives 128+N") {
    job.rank_exits(8, 0, SIGKILL);
    job.rank_exits(1501, 3);
    CHECK(job.printed() ==
          "dlaunch: job job failed: rank 8 on host4 was killed by signal SIGKILL\n");
    check_everyone_got(
        job, kNodes, stop_of(137, "job job failed: rank 8 on host4 was killed by signal SIGKILL"));
    job.all_agents_stop();
    CHECK(job.exit_code == 137);
    CHECK(job.policy().result().root_cause_tail.empty());
  }
}

TEST_CASE("restarts back off 500 ms, 1 s, 2 s ... up to 30 s, then the job fails") {
  constexpr int kRestarts = 8;
  FakeJob job({.nodes = kNodes, .max_restarts = kRestarts});
  job.start();
  job.join_all();
  const std::vector<milliseconds> delays = {
      milliseconds(500),  milliseconds(1000),  milliseconds(2000),  milliseconds(4000),
      milliseconds(8000), milliseconds(16000), milliseconds(30000), milliseconds(30000)};
  for (int round = 0; round < kRestarts; ++round) {
    CAPTURE(round);
    job.forget_received();
    const int rank = (round * 7 + 1) % job.world_size();
    const std::string what = "rank " + std::to_string(rank) + " on host" +
                             std::to_string(job.node_of_rank(rank)) + " exited with code 1";
    job.rank_exits(rank, 1);
    CHECK(job.printed() == "dlaunch: " + what + "; restarting all ranks (restart " +
                               std::to_string(round + 1) + " of 8)\n");
    check_everyone_got(job, kNodes, stop_of(0, what, true));
    CHECK(job.policy().result().restarts == round + 1);

    job.all_ranks_exit(0);  // ranks stopped for the restart: not a new failure
    job.all_agents_done();
    CHECK(job.armed(JobTimer::restart_backoff) == delays[static_cast<std::size_t>(round)]);
    const auto before = job.now();
    CHECK(job.fire_next_timer() == JobTimer::restart_backoff);
    CHECK(job.now() - before == delays[static_cast<std::size_t>(round)]);
    CHECK(job.log_round() == round + 1);
    CHECK(job.has_log("info: restart " + std::to_string(round + 1) + " of 8: starting all ranks"));
    for (int node = 0; node < kNodes; node += 111) {
      const auto assigns = job.received_of<proto::Assign>(node);
      REQUIRE(assigns.size() == 1);
      CHECK(assigns[0].round == round + 1);
      CHECK(assigns[0].master_port == 31000);  // node 0's fresh port
    }
  }
  CHECK(job.printed().empty());
  job.forget_received();
  job.rank_exits(5, 1);
  CHECK(job.printed() == "dlaunch: job job failed: rank 5 on host2 exited with code 1\n");
  check_everyone_got(job, kNodes, stop_of(1, "job job failed: rank 5 on host2 exited with code 1"));
  job.all_agents_stop();
  CHECK(job.exit_code == 1);
  CHECK(job.policy().result().restarts == kRestarts);
}

TEST_CASE("a node lost while restarting fails the job instead of waiting for it") {
  FakeJob job({.nodes = kNodes, .max_restarts = 3});
  job.start();
  job.join_all();
  job.rank_exits(0, 2);
  CHECK(job.printed() ==
        "dlaunch: rank 0 on host0 exited with code 2; restarting all ranks (restart 1 of 3)\n");
  job.all_agents_done();
  REQUIRE(job.armed(JobTimer::restart_backoff));
  job.forget_received();

  job.connection_lost(999, "no message for 15 s");
  const std::string what = "lost the agent of node 999 (host999): no message for 15 s";
  CHECK(job.printed() == "dlaunch: job job failed: " + what + " (while restarting)\n");
  CHECK(job.transport.agent(999).kills == 1);
  CHECK(job.transport.agent(998).kills == 0);
  check_everyone_got(job, kNodes, stop_of(1, "job job failed: " + what), {999});
  CHECK_FALSE(job.armed(JobTimer::restart_backoff));
  CHECK(job.log_round() == 0);

  for (int node = 0; node < kNodes; ++node) job.agent_stops(node);
  CHECK(job.exit_code == 1);
  CHECK(job.policy().result().root_cause == what);
}

TEST_CASE("a restart that one agent never finishes loses that node at grace + 5 s") {
  FakeJob job({.nodes = 3, .max_restarts = 1});
  job.start();
  job.join_all();
  job.rank_exits(0, 1);
  REQUIRE(job.policy().status() == JobStatus::restarting);
  job.agent_done(0);
  job.agent_done(1);  // node 2 keeps its connection, and never says it is done
  CHECK(job.armed(JobTimer::round_stop) == seconds(15));  // grace 10 s + 5 s
  CHECK(job.fire_next_timer() == JobTimer::round_stop);
  const std::string what =
      "lost the agent of node 2 (host2): its ranks did not stop within the grace period (10 s) "
      "for the restart";
  CHECK(job.printed().find("dlaunch: job job failed: " + what + " (while restarting)") !=
        std::string::npos);
  CHECK(job.closed_by_server == std::vector<ConnId>{FakeJob::conn(2)});
  CHECK(job.transport.agent(2).kills == 1);
  for (int node = 0; node < 3; ++node) job.agent_stops(node);
  CHECK(job.exit_code == 1);
  CHECK(job.policy().status() == JobStatus::failed);
}

TEST_CASE("a second interrupt asks for grace 0 and kills the agents after 3 s") {
  FakeJob job({.nodes = kNodes, .max_restarts = 5});
  job.start();
  job.join_all();

  job.signal(SIGINT);
  CHECK(job.printed() == "dlaunch: received SIGINT: stopping all ranks (again to kill them now)\n");
  check_everyone_got(job, kNodes, stop_of(130, "job job was stopped: interrupted by SIGINT"));
  CHECK(job.armed(JobTimer::stop_deadline) == seconds(15));
  // Ranks stopped by the interrupt do not count as failures, nor restart.
  job.rank_exits(3, 0, SIGTERM);
  CHECK(job.printed().empty());
  for (int node = 0; node < kNodes / 2; ++node) job.agent_stops(node);
  job.forget_received();

  job.signal(SIGINT);
  CHECK(job.printed() == "dlaunch: received SIGINT again: killing all ranks now\n");
  for (int node = kNodes / 2; node < kNodes; ++node) {
    const auto stops = job.received_of<proto::Stop>(node);
    REQUIRE(stops.size() == 1);
    CHECK(stops[0].grace_s == 0);
    CHECK(stops[0].exit_code == 130);
  }
  for (int node = 0; node < kNodes / 2; ++node) CHECK(job.received(node).empty());
  CHECK(job.armed(JobTimer::stop_deadline) == seconds(3));

  const auto before = job.now();
  CHECK(job.fire_next_timer() == JobTimer::stop_deadline);
  CHECK(job.now() - before == seconds(3));
  for (int node = 0; node < kNodes; ++node)
    CHECK(job.transport.agent(node).kills == (node < kNodes / 2 ? 0 : 1));
  CHECK(job.logs.end() == std::find_if(job.logs.begin(), job.logs.end(), [](const auto& l) {
          return l.find("did not exit in time") != std::string::npos;
        }));
  CHECK(job.exit_code == 130);
  CHECK(job.policy().result().root_cause == "interrupted by SIGINT");
  CHECK(job.policy().result().restarts == 0);
}

TEST_CASE("SIGTERM stops the job with 143; an interrupt while stopping sets the code") {
  FakeJob job({.nodes = 4});
  job.start();
  job.join_all();
  SUBCASE("while running") {
    job.signal(SIGTERM);
    job.all_agents_stop();
    CHECK(job.exit_code == 143);
  }
  SUBCASE("while already stopping after a failure") {
    job.rank_exits(1, 7);
    job.signal(SIGTERM);
    CHECK(job.printed() ==
          "dlaunch: job job failed: rank 1 on host0 exited with code 7\n"
          "dlaunch: received SIGTERM: stopping all ranks (again to kill them now)\n");
    job.all_agents_stop();
    CHECK(job.exit_code == 143);
    CHECK(job.policy().result().root_cause == "interrupted by SIGTERM");
  }
}

TEST_CASE("the rendezvous timeout names the nodes that never joined") {
  FakeJob job({.nodes = kNodes});
  job.start();
  for (int node = 0; node < kNodes; ++node) {
    if (node != 3 && node != 500 && node != 999) job.join(node);
  }
  // Every 10 s the user hears who is still missing, not silence for 600 s.
  CHECK(job.fire_next_timer() == JobTimer::waiting_report);
  CHECK(job.now() == seconds(10));
  CHECK(job.printed() ==
        "dlaunch: waiting for 3 of 1000 nodes to join (10 s of --rdzv-timeout 600 s): host3, "
        "host500, host999\n");
  int reports = 1;
  std::optional<JobTimer> fired;
  while ((fired = job.fire_next_timer()) == JobTimer::waiting_report) ++reports;
  CHECK(reports == 59);
  CHECK(fired == JobTimer::rendezvous);
  CHECK(job.now() == seconds(600));
  const std::string printed = job.printed();
  CHECK(printed.find("(590 s of --rdzv-timeout 600 s)") != std::string::npos);
  const std::string what =
      "timed out after 600 s waiting for nodes to join: host3, host500, host999 (raise "
      "--rdzv-timeout, or check that they can reach the rendezvous port)";
  CHECK(printed.ends_with("dlaunch: job job failed: " + what + "\n"));
  check_everyone_got(job, kNodes, stop_of(1, "job job failed: " + what), {3, 500, 999});
  for (int node = 0; node < kNodes; ++node) {
    const bool missing = node == 3 || node == 500 || node == 999;
    CHECK(job.transport.agent(node).stdin_closed == missing);
  }
  job.all_agents_stop();
  CHECK(job.exit_code == 1);
}

TEST_CASE("agents that do not exit by the stop deadline are killed") {
  FakeJob job({.nodes = kNodes, .grace_s = 30});
  job.start();
  job.join_all();
  job.rank_exits(42, 9);
  for (int node = 0; node < kNodes; ++node) {
    if (node != 10 && node != 20) job.agent_stops(node);
  }
  CHECK_FALSE(job.exit_code);
  CHECK(job.fire_next_timer() == JobTimer::stop_deadline);
  CHECK(job.now() == seconds(35));
  CHECK(job.has_log("warn: agent on host10 did not exit in time; killing it"));
  CHECK(job.has_log("warn: agent on host20 did not exit in time; killing it"));
  for (int node = 0; node < kNodes; ++node)
    CHECK(job.transport.agent(node).kills == (node == 10 || node == 20 ? 1 : 0));
  CHECK(job.exit_code == 9);
}

TEST_CASE("a lost agent fails the job at once, even with restarts left") {
  FakeJob job({.nodes = 3, .max_restarts = 2});
  job.start();
  job.join_all();
  SUBCASE("its connection closes: it is killed") {
    job.connection_lost(1, "connection closed by peer");
    CHECK(job.printed() ==
          "dlaunch: job job failed: lost the agent of node 1 (host1): connection closed by peer\n");
    CHECK(job.transport.agent(1).kills == 1);
    check_everyone_got(job, 3,
                       stop_of(1,
                               "job job failed: lost the agent of node 1 (host1): connection "
                               "closed by peer"),
                       {1});
  }
  SUBCASE("its process exits: the tail of its diagnostics is the cause") {
    job.agent_writes_stderr(2, "warning: low disk\nerror: cannot bind\n\n");
    job.agent_exits(2, 3);
    CHECK(job.printed() ==
          "[host2 agent] warning: low disk\n"
          "[host2 agent] error: cannot bind\n"
          "dlaunch: job job failed: the agent on host2 exited with code 3: warning: low disk\n"
          "error: cannot bind\n");
    CHECK(job.transport.agent(2).stdin_closed);
    CHECK(job.transport.agent(2).kills == 0);
  }
  SUBCASE("it could never start: the transport's error is the cause") {
    job.agent_exits(0, -1, "cannot connect to host0: no route to host");
    CHECK(job.printed() == "dlaunch: job job failed: cannot connect to host0: no route to host\n");
  }
  job.all_agents_stop();
  CHECK(job.exit_code == 1);
  CHECK(job.policy().result().restarts == 0);
}

TEST_CASE("--verbose notes every rank's exit") {
  FakeJob job({.nodes = 2, .verbose = true});
  job.start();
  job.join_all();
  job.rank_exits(0, 0);
  job.rank_exits(3, 0, SIGSEGV);
  CHECK(job.printed() ==
        "dlaunch: rank 0 on host0 exited with code 0\n"
        "dlaunch: rank 3 on host1 exited with signal SIGSEGV\n"
        "dlaunch: job job failed: rank 3 on host1 was killed by signal SIGSEGV\n");
}

TEST_CASE("a node behind a jump host that never joins: the timeout suggests via = ssh") {
  FakeJob job({.nodes = 3, .rdzv_timeout_s = 20, .behind_jump = {1, 2}});
  job.start();
  job.join(0);
  job.join(2);
  while (job.fire_next_timer() == JobTimer::waiting_report) {
  }
  CHECK(job.printed().find("waiting for nodes to join: host1 (raise --rdzv-timeout, or check "
                           "that they can reach the rendezvous port; host1 reached through a "
                           "jump host: a network that lets only SSH in needs via = \"ssh\" "
                           "under [rendezvous] in the hosts file, or --rdzv-via-ssh)") !=
        std::string::npos);
}

TEST_CASE("once every missing node's agent says it cannot connect, the job fails at once") {
  FakeJob job({.nodes = 4, .rdzv_timeout_s = 600, .behind_jump = {2}});
  job.start();
  job.join(0);
  job.join(1);
  // The report may arrive in pieces, after a warning prefix.
  job.agent_writes_stderr(2, "dlaunch-agent: warning: cannot connect to 198.18.0.254:29400: ");
  job.agent_writes_stderr(2,
                          "Connection refused (the rendezvous; still trying until the timeout)\n");
  CHECK_FALSE(job.exit_code.has_value());
  CHECK(job.printed().find("failed") == std::string::npos);  // host3 may still come
  job.agent_writes_stderr(3,
                          "dlaunch-agent: warning: cannot connect to 198.18.0.254:29400: "
                          "No route to host (the rendezvous; still trying until the timeout)\n");
  job.all_agents_stop();
  REQUIRE(job.exit_code == 1);
  const std::string printed = job.printed();
  CHECK(printed.find("2 nodes cannot reach the rendezvous, and no other is missing: host2: "
                     "cannot connect to 198.18.0.254:29400: Connection refused; host3: cannot "
                     "connect to 198.18.0.254:29400: No route to host") != std::string::npos);
  CHECK(printed.find("host2 reached through a jump host: a network that lets only SSH in needs "
                     "via = \"ssh\"") != std::string::npos);
  CHECK(printed.find("timed out") == std::string::npos);
  for (int node = 0; node < 4; ++node) CHECK(job.received_of<proto::Assign>(node).empty());
}

TEST_CASE("an agent that reports it cannot connect and then joins is on its way again") {
  FakeJob job({.nodes = 4});
  const std::string refused = "cannot connect to a:1: Connection refused " +
                              std::string(proto::kRendezvousUnreachableNote) + "\n";
  job.start();
  job.join(0);
  job.agent_writes_stderr(1, refused);
  job.join(1);  // the coordinator's listener was briefly full, say
  job.agent_writes_stderr(2, refused);
  CHECK(job.printed().find("cannot reach the rendezvous") == std::string::npos);  // host3 may come
  // host3 arrives: host2, which said it cannot connect, is all that is missing.
  job.join(3);
  job.all_agents_stop();
  REQUIRE(job.exit_code == 1);
  CHECK(job.printed().find("1 node cannot reach the rendezvous, and no other is missing: host2: "
                           "cannot connect to a:1: Connection refused (") != std::string::npos);
}

TEST_CASE("one GPU machine listed twice is refused before any rank starts, naming both") {
  FakeJob job({.nodes = 3});
  job.start();
  job.join(0, "m0/b0", 2);
  job.join(1, "m1/b1", 2);
  job.join(2, "m1/b1", 2);  // host2 is host1 under another name
  for (int node = 0; node < 3; ++node) CHECK(job.received_of<proto::Assign>(node).empty());
  job.all_agents_stop();
  REQUIRE(job.exit_code == 2);
  const std::string printed = job.printed();
  CHECK(printed.find("nodes 1 (host1) and 2 (host2) are the same machine") != std::string::npos);
  CHECK(printed.find("two ranks would share a GPU") != std::string::npos);
}

TEST_CASE("a CPU-only machine listed twice is said once, and the job runs") {
  FakeJob job({.nodes = 3});
  job.start();
  job.join(0, "m/b");
  job.join(1, "m/b");
  job.join(2, "m/b");
  CHECK(job.received_of<proto::Assign>(2).size() == 1);
  CHECK(job.has_log(
      "warn: nodes 0 (host0) and 1 (host1) are the same machine (one /etc/machine-id and boot "
      "id): fine on a machine without GPUs, where their ranks share its CPUs"));
  CHECK_FALSE(job.has_log(
      "warn: nodes 0 (host0) and 2 (host2) are the same machine (one /etc/machine-id and boot "
      "id): fine on a machine without GPUs, where their ranks share its CPUs"));
}

TEST_CASE("a refused agent is told why and dropped; exits of foreign ranks are ignored") {
  FakeJob job({.nodes = 2});
  job.start();
  job.join(0);
  job.join(0);  // the same connection joins again
  const auto rejects = job.received_of<proto::Reject>(0);
  REQUIRE(rejects.size() == 1);
  CHECK(rejects[0].reason == "this connection has already joined");
  CHECK(job.closed_by_server == std::vector<ConnId>{FakeJob::conn(0)});
  CHECK(job.has_log("warn: refused an agent: this connection has already joined"));
  // Its connection is closed, so its agent is lost.
  CHECK(job.printed().find("lost the agent of node 0 (host0)") != std::string::npos);

  FakeJob two({.nodes = 2});
  two.start();
  two.join_all();
  two.rank_exits_on(0, 3, 5);  // node 0 reports a rank of node 1
  CHECK(two.has_log("warn: host0 sent an exit for rank 3, which is not one of its ranks; ignored"));
  CHECK(two.printed().empty());
  CHECK(two.received_of<proto::Stop>(1).empty());
}

TEST_CASE("an agent that keeps sending for ranks not its own is said five times, then closed") {
  FakeJob job({.nodes = 2});
  job.start();
  job.join_all();
  for (std::size_t i = 0; i < JobPolicy::kForeignRankLimit - 1; ++i) job.rank_exits_on(0, 3, 5);
  std::size_t said = 0;
  for (const auto& l : job.logs)
    said += l.find("which is not one of its ranks") != std::string::npos;
  CHECK(said == JobPolicy::kForeignRanksSaid);
  CHECK(
      job.has_log("warn: host0 sent an exit for rank 3, which is not one of its ranks; ignored "
                  "(more such from it are not shown)"));
  CHECK(job.closed_by_server.empty());
  job.rank_exits_on(0, 3, 5);
  CHECK(job.closed_by_server == std::vector<ConnId>{FakeJob::conn(0)});
  CHECK(
      job.has_log("warn: host0 sent 1000 messages for ranks that are not its own; its "
                  "connection is closed"));
}

TEST_CASE("a --ranks-filter rank the world turns out not to have is warned about once") {
  FakeJob job({.nodes = 3, .nproc = 2, .ranks_filter = {1, 6, 9}});
  job.start();
  job.join_all();
  std::vector<std::string> warnings;
  for (const auto& l : job.logs) {
    if (l.starts_with("warn: ")) warnings.push_back(l);
  }
  CHECK(warnings ==
        std::vector<std::string>{"warn: --ranks-filter 6,9: this job has ranks 0..5 only; those "
                                 "print nothing"});
}

TEST_CASE("MASTER_ADDR is the first of node 0's addresses every node reached") {
  FakeJob job({.nodes = 3, .nproc = 1, .verbose = false, .probe = true});
  job.start();
  job.join_all();
  // Nobody is assigned yet: every node was asked to probe node 0's candidates.
  CHECK(job.received_of<proto::Assign>(1).empty());
  const auto probes = job.received_of<proto::Probe>(2);
  REQUIRE(probes.size() == 1);
  CHECK(probes[0].port == 29500);
  CHECK(probes[0].addresses == std::vector<std::string>{"198.19.0.2", "198.18.1.10"});
  job.probe_report(0, {true, true});
  job.probe_report(1, {false, true});
  CHECK(job.received_of<proto::Assign>(0).empty());
  job.probe_report(2, {false, true});
  for (int node = 0; node < 3; ++node) {
    const auto assigns = job.received_of<proto::Assign>(node);
    REQUIRE(assigns.size() == 1);
    CHECK(assigns[0].master_addr == "198.18.1.10");
    CHECK(assigns[0].socket_ifname == (node == 0 ? "ens5" : "eth" + std::to_string(node)));
  }
  CHECK(
      job.has_log("info: job job: 3 ranks on 3 nodes, MASTER_ADDR=198.18.1.10 MASTER_PORT=29500"));
  CHECK_FALSE(job.armed(JobTimer::rendezvous).has_value());
}

TEST_CASE("no address reached by every node fails the job before any rank starts") {
  FakeJob job({.nodes = 3, .nproc = 1, .probe = true});
  job.start();
  job.join_all();
  job.probe_report(0, {true, true});
  job.probe_report(1, {false, true});
  job.probe_report(2, {false, false});
  // Reaching nothing may be a lost SYN: host2 is asked once more.
  CHECK(job.received_of<proto::Probe>(2).size() == 2);
  CHECK(job.received_of<proto::Stop>(2).empty());
  job.probe_report(2, {false, false});
  for (int node = 0; node < 3; ++node) {
    CHECK(job.received_of<proto::Assign>(node).empty());
    CHECK(job.received_of<proto::Stop>(node).size() == 1);
  }
  const std::string printed = job.printed();
  CHECK(printed.find("job job failed: no address of node 0 (host0) was reached by every node") !=
        std::string::npos);
  CHECK(printed.find("not reached from host2 (timed out)") != std::string::npos);
  CHECK(printed.find("198.18.1.10") != std::string::npos);
  job.all_agents_stop();
  CHECK(job.exit_code == 1);
}

namespace {
std::vector<std::string> probe_addresses(FakeJob& job, int node) {
  const auto probes = job.received_of<proto::Probe>(node);
  return probes.empty() ? std::vector<std::string>{} : probes.back().addresses;
}
// The nodes asked so far: right after the joins of a job in rounds, its scouts.
std::vector<int> nodes_asked(FakeJob& job, int nodes) {
  std::vector<int> asked;
  for (int node = 0; node < nodes; ++node)
    if (!job.received_of<proto::Probe>(node).empty()) asked.push_back(node);
  return asked;
}
int nodes_probed(FakeJob& job, int nodes) {
  return static_cast<int>(nodes_asked(job, nodes).size());
}
}  // namespace

TEST_CASE("a big job probes in rounds: scouts try every address, the rest only their choice") {
  // 3,000 nodes, 2 candidates: 64 scouts (node 0 and the last among them) try
  // both; then the others try the scouts' choice, 2,048 connections in flight
  // at most, each report letting one more node start.
  FakeJob job({.nodes = 3000, .nproc = 1, .probe = true});
  job.start();
  job.join_all();
  CHECK(nodes_probed(job, 3000) == 64);
  const std::vector<std::string> both{"198.19.0.2", "198.18.1.10"};
  CHECK(probe_addresses(job, 0) == both);
  CHECK(probe_addresses(job, 2999) == both);
  CHECK(probe_addresses(job, 1).empty());
  const std::vector<int> scouts = nodes_asked(job, 3000);
  for (int node : scouts) job.probe_report(node, {false, true});
  CHECK(nodes_probed(job, 3000) == 64 + 2048);
  CHECK(probe_addresses(job, 1) == std::vector<std::string>{"198.18.1.10"});
  int first_waiting = -1;
  for (int node = 0; node < 3000 && first_waiting < 0; ++node)
    if (job.received_of<proto::Probe>(node).empty()) first_waiting = node;
  REQUIRE(first_waiting > 0);
  job.probe_report(1, {true});
  CHECK(nodes_probed(job, 3000) == 64 + 2049);
  CHECK(probe_addresses(job, first_waiting) == std::vector<std::string>{"198.18.1.10"});
  for (int node = 2; node < 3000; ++node) {
    if (std::find(scouts.begin(), scouts.end(), node) == scouts.end())
      job.probe_report(node, {true});
  }
  CHECK(nodes_probed(job, 3000) == 3000);
  for (int node : {0, 1, 1024, 2999}) {
    const auto assigns = job.received_of<proto::Assign>(node);
    REQUIRE(assigns.size() == 1);
    CHECK(assigns[0].master_addr == "198.18.1.10");
    CHECK(assigns[0].socket_ifname == (node == 0 ? "ens5" : "eth" + std::to_string(node)));
  }
}

TEST_CASE("a node that misses the scouts' choice makes every node try every address") {
  FakeJob job({.nodes = 300, .nproc = 1, .probe = true});
  job.start();
  job.join_all();
  const std::vector<int> scouts = nodes_asked(job, 300);
  REQUIRE(scouts.size() == 64);
  for (int node : scouts) job.probe_report(node, {true, true});
  CHECK(probe_addresses(job, 1) == std::vector<std::string>{"198.19.0.2"});
  job.probe_report(1, {true});
  job.probe_report(2, {false});
  CHECK(
      job.has_log("info: host2 did not reach 198.19.0.2, which every scout reached: every node "
                  "now tries every address"));
  const std::vector<std::string> both{"198.19.0.2", "198.18.1.10"};
  CHECK(probe_addresses(job, 1) == both);
  CHECK(probe_addresses(job, 2) == both);
  CHECK(job.received_of<proto::Probe>(scouts[1]).size() == 1);  // scouts are not asked again
  job.probe_report(3, {true});  // its answer to the first round: too late to count
  for (int node = 1; node < 300; ++node) {
    if (std::find(scouts.begin(), scouts.end(), node) != scouts.end()) continue;
    CHECK(job.received_of<proto::Assign>(0).empty());
    job.probe_report(node, {node == 2 ? false : true, true});
  }
  const auto assigns = job.received_of<proto::Assign>(2);
  REQUIRE(assigns.size() == 1);
  CHECK(assigns[0].master_addr == "198.18.1.10");
}

TEST_CASE("a scout that reaches no address twice fails the job at once, named") {
  FakeJob job({.nodes = 300, .nproc = 1, .probe = true});
  job.start();
  job.join_all();
  const std::vector<int> scouts = nodes_asked(job, 300);
  REQUIRE(scouts.size() == 64);
  const int slow = scouts[7];
  for (int node : scouts)
    if (node != slow) job.probe_report(node, {true, true});
  job.probe_report(slow, {false, false});
  CHECK(job.has_log("info: " + FakeJob::host(slow) +
                    " reached none of node 0's addresses; it tries them once more"));
  CHECK(job.received_of<proto::Probe>(slow).size() == 2);
  job.probe_report(slow, {false, false});
  const std::string printed = job.printed();
  CHECK(printed.find("no MASTER_ADDR can be reached by every node: " + FakeJob::host(slow) +
                     " reached none of node 0's addresses, twice:\n  198.19.0.2: timed out\n"
                     "  198.18.1.10: timed out\n") != std::string::npos);
  for (int node = 0; node < 300; ++node) CHECK(job.received_of<proto::Assign>(node).empty());
  job.all_agents_stop();
  CHECK(job.exit_code == 1);
}

TEST_CASE("the probe starts once node 0 has joined, each node asked as it joins") {
  FakeJob job({.nodes = 3, .nproc = 1, .rdzv_timeout_s = 30, .probe = true});
  job.start();
  job.join(2);
  CHECK(job.received_of<proto::Probe>(2).empty());  // node 0's addresses are not known yet
  job.join(0);
  CHECK(job.received_of<proto::Probe>(0).size() == 1);
  CHECK(job.received_of<proto::Probe>(2).size() == 1);
  job.probe_report(0, {true, true});
  job.probe_report(2, {false, true});
  // While a node is missing, the waiting report and the timeout name the join.
  job.fire_next_timer();
  CHECK(job.printed().find("waiting for 1 of 3 nodes to join") != std::string::npos);
  job.join(1);
  REQUIRE(job.received_of<proto::Probe>(1).size() == 1);
  CHECK(job.received_of<proto::Assign>(0).empty());
  job.probe_report(1, {true, true});
  for (int node = 0; node < 3; ++node) {
    const auto assigns = job.received_of<proto::Assign>(node);
    REQUIRE(assigns.size() == 1);
    CHECK(assigns[0].master_addr == "198.18.1.10");
  }
}

TEST_CASE("a node that joins too late times out as a join, not as a probe") {
  FakeJob job({.nodes = 3, .nproc = 1, .rdzv_timeout_s = 30, .probe = true});
  job.start();
  job.join(0);
  job.join(2);
  job.probe_report(0, {true, true});
  job.probe_report(2, {true, true});
  while (auto t = job.fire_next_timer()) {
    if (*t == JobTimer::rendezvous) break;
  }
  CHECK(job.printed().find("s waiting for nodes to join: host1") != std::string::npos);
}

TEST_CASE("a node that never answers the probe is named when the rendezvous times out") {
  FakeJob job({.nodes = 3, .nproc = 1, .rdzv_timeout_s = 30, .probe = true});
  job.start();
  job.join_all();
  job.probe_report(0, {true, true});
  job.probe_report(2, {true, true});
  while (auto t = job.fire_next_timer()) {
    if (*t == JobTimer::rendezvous) break;
  }
  const std::string printed = job.printed();
  CHECK(printed.find("waiting for 1 nodes to report their probe of node 0's addresses: host1") !=
        std::string::npos);
  CHECK(printed.find("waiting for the probe of node 0's addresses from: host1") !=
        std::string::npos);
}

TEST_CASE("the record's status moves PENDING, RUNNING, RESTARTING, RUNNING, then ends") {
  FakeJob job({.nodes = 3, .max_restarts = 1});
  job.start();
  CHECK(job.policy().status() == JobStatus::pending);
  job.join(0);
  auto nodes = job.policy().node_records();
  REQUIRE(nodes.size() == 3);
  CHECK(nodes[0] == NodeRecord{"host0", 0, -1, 0, 7000, "running"});
  CHECK(nodes[1].state == "pending");
  job.join(1);
  job.join(2);
  CHECK(job.policy().status() == JobStatus::running);
  nodes = job.policy().node_records();
  CHECK(nodes[2] == NodeRecord{"host2", 2, 4, 2, 7002, "running"});

  job.rank_exits(3, 1);
  CHECK(job.policy().status() == JobStatus::restarting);
  job.all_ranks_exit(0);
  job.all_agents_done();
  CHECK(job.policy().node_records()[1].state == "done");
  CHECK(job.fire_next_timer() == JobTimer::restart_backoff);
  CHECK(job.policy().status() == JobStatus::running);
  CHECK(job.policy().round() == 1);

  job.all_ranks_exit(0);
  job.all_agents_done();
  job.all_agents_stop();
  CHECK(job.policy().finished());
  CHECK(job.policy().status() == JobStatus::succeeded);
}

TEST_CASE("`dlaunch stop --grace S` gives the ranks S seconds and the job ends STOPPED") {
  FakeJob job({.nodes = 2, .grace_s = 10});
  job.start();
  job.join_all();
  job.signal(SIGTERM, 2);
  for (int node = 0; node < 2; ++node) {
    const auto stops = job.received_of<proto::Stop>(node);
    REQUIRE(stops.size() == 1);
    CHECK(stops[0].grace_s == 2);
    CHECK(stops[0].exit_code == 143);
  }
  CHECK(job.armed(JobTimer::stop_deadline) == seconds(7));  // grace + 5 s
  job.all_ranks_exit(143);
  job.all_agents_stop();
  CHECK(job.exit_code == 143);
  CHECK(job.policy().status() == JobStatus::stopped);
}

TEST_CASE("a job stopped before its ranks were assigned was PENDING, and ends STOPPED") {
  FakeJob job({.nodes = 2});
  job.start();
  job.join(0);
  job.signal(SIGINT);
  CHECK(job.policy().status() == JobStatus::pending);
  job.all_agents_stop();
  CHECK(job.policy().status() == JobStatus::stopped);
}

TEST_CASE("--sync starts on each node as it joins and holds the ranks until every node is done") {
  FakeJob job({.nodes = 3, .nproc = 1, .sync = true});
  job.start();
  job.join(0);
  CHECK(job.sync_started == std::vector<int>{0});
  job.sync_done(0);  // node 0 is done before the others even joined
  job.join(1);
  job.join(2);
  CHECK(job.sync_started == std::vector<int>{0, 1, 2});
  job.sync_done(2);
  for (int node = 0; node < 3; ++node) CHECK(job.received_of<proto::Assign>(node).empty());
  CHECK(job.policy().status() == JobStatus::pending);
  job.sync_done(1);
  for (int node = 0; node < 3; ++node) CHECK(job.received_of<proto::Assign>(node).size() == 1);
  CHECK(job.has_log("info: --sync to host1: 3 files written, 100 bytes sent, 0 deleted"));
  CHECK(job.has_log("info: job job: 3 ranks on 3 nodes, MASTER_ADDR=10.0.0.1 MASTER_PORT=29500"));
  CHECK_FALSE(job.armed(JobTimer::rendezvous).has_value());
  // A restart round does not sync again.
  job.all_ranks_exit(0);
  job.all_agents_done();
  CHECK(job.sync_started.size() == 3);
}

TEST_CASE("--sync and the MASTER_ADDR probe: the ranks wait for both") {
  FakeJob job({.nodes = 2, .nproc = 1, .probe = true, .sync = true});
  job.start();
  job.join_all();
  job.probe_report(0, {true, true});
  job.probe_report(1, {true, true});
  CHECK(job.received_of<proto::Assign>(0).empty());
  job.sync_done(0);
  job.sync_done(1);
  const auto assigns = job.received_of<proto::Assign>(1);
  REQUIRE(assigns.size() == 1);
  CHECK(assigns[0].master_addr == "198.19.0.2");
  CHECK(assigns[0].socket_ifname == "eth1");
}

TEST_CASE("a failed --sync fails the job before any rank starts, naming the host") {
  FakeJob job({.nodes = 3, .nproc = 1, .sync = true});
  job.start();
  job.join_all();
  job.sync_done(0);
  job.sync_done(1, "data/x: No space left on device");
  for (int node = 0; node < 3; ++node) {
    CHECK(job.received_of<proto::Assign>(node).empty());
    CHECK(job.received_of<proto::Stop>(node).size() == 1);
  }
  CHECK(job.printed().find("job job failed: --sync to host1 failed: data/x: No space left on "
                           "device") != std::string::npos);
  job.sync_done(2);  // too late: nothing starts
  CHECK(job.received_of<proto::Assign>(2).empty());
  job.all_agents_stop();
  CHECK(job.exit_code == 1);
}

TEST_CASE("a --sync that does not finish is named while waiting and at the rendezvous timeout") {
  FakeJob job({.nodes = 3, .nproc = 1, .rdzv_timeout_s = 30, .sync = true});
  job.start();
  job.join_all();
  job.sync_done(0);
  job.sync_done(2);
  while (auto t = job.fire_next_timer()) {
    if (*t == JobTimer::rendezvous) break;
  }
  const std::string printed = job.printed();
  CHECK(printed.find("waiting for 1 nodes to finish --sync: host1") != std::string::npos);
  CHECK(printed.find("s waiting for --sync to finish on: host1") != std::string::npos);
}

TEST_CASE("a node that joins after the job was stopped is told to stop at once") {
  FakeJob job({.nodes = 3});
  job.start();
  job.join(0);
  job.join(1);
  job.agent_exits(1, 1);  // the job fails while node 2 is still on its way
  CHECK(job.received_of<proto::Stop>(0).size() == 1);
  job.join(2);
  REQUIRE(job.received_of<proto::Stop>(2).size() == 1);
  CHECK(job.received_of<proto::Assign>(2).empty());
  job.all_agents_stop();
  CHECK(job.exit_code == 1);
}
