#include "agent/agent_state.h"

#include <doctest/doctest.h>

#include <csignal>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

using namespace dlaunch;
using namespace dlaunch::agent_event;
using namespace dlaunch::agent_action;

namespace {

constexpr int kNodeRank = 1;
constexpr int kNproc = 2;
constexpr int kGrace = 5;

proto::Assign assignment(int round = 0) {
  proto::Assign a;
  a.round = round;
  a.node_rank = kNodeRank;
  a.local_world_size = kNproc;
  a.rank_offset = 2;
  return a;
}

proto::Stop stop(bool restart, int exit_code = 0, int grace_s = -1, std::string reason = "") {
  proto::Stop s;
  s.restart = restart;
  s.exit_code = exit_code;
  s.grace_s = grace_s;
  s.reason = std::move(reason);
  return s;
}

// The names of the actions, in order, so a whole reaction reads as one line.
std::string names(const std::vector<AgentAction>& actions) {
  std::string out;
  for (const auto& a : actions) {
    if (!out.empty()) out += ' ';
    out += std::visit(
        [](const auto& x) -> std::string {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, StartRound>) return "start";
          if constexpr (std::is_same_v<T, TerminateRanks>) return "terminate";
          if constexpr (std::is_same_v<T, KillAfter>) return "kill_after";
          if constexpr (std::is_same_v<T, SweepLeftovers>) return "sweep";
          if constexpr (std::is_same_v<T, SendAgentDone>) return "done";
          if constexpr (std::is_same_v<T, AnnounceStop>) return "announce";
          if constexpr (std::is_same_v<T, DropCoordinator>) return "drop";
          if constexpr (std::is_same_v<T, LogWarning>) return "warn";
          if constexpr (std::is_same_v<T, LogError>) return "error";
          if constexpr (std::is_same_v<T, Finish>) return "finish";
          return "?";
        },
        a);
  }
  return out;
}

template <class T>
const T& the(const std::vector<AgentAction>& actions) {
  for (const auto& a : actions) {
    if (const auto* x = std::get_if<T>(&a)) return *x;
  }
  FAIL("action not found");
  throw std::logic_error("unreachable");
}

struct Machine {
  AgentStateMachine machine{{kNproc, kGrace}};
  std::vector<AgentAction> on(const AgentEvent& e) { return machine.on(e); }
  AgentState state() const { return machine.state(); }
  int exit_code() const { return machine.exit_code(); }

  // Joined and running round `round`.
  void run_round(int round = 0) {
    on(Joined{});
    REQUIRE(names(on(AssignmentReceived{assignment(round)})) == "start");
    REQUIRE(state() == AgentState::running_round);
  }
};

}  // namespace

TEST_CASE("a normal round: join, run, ranks end, sweep, AgentDone, wait for more") {
  Machine a;
  CHECK(a.state() == AgentState::joining);
  CHECK(names(a.on(Joined{})) == "");
  CHECK(a.state() == AgentState::waiting_for_assignment);

  const auto started = a.on(AssignmentReceived{assignment(0)});
  CHECK(names(started) == "start");
  CHECK(the<StartRound>(started).assign.rank_offset == 2);
  CHECK(a.state() == AgentState::running_round);

  CHECK(names(a.on(RanksEnded{})) == "sweep");
  CHECK(a.state() == AgentState::sweeping);
  const auto swept = a.on(LeftoversSwept{});
  CHECK(names(swept) == "done");
  CHECK(the<SendAgentDone>(swept).round == 0);
  CHECK(a.state() == AgentState::waiting_for_assignment);

  // The coordinator ends the job after the round: exit with its code.
  const auto ended = a.on(StopReceived{stop(false, 0, -1, "job finished")});
  CHECK(names(ended) == "announce finish");
  CHECK(the<Finish>(ended).exit_code == 0);
  CHECK(a.state() == AgentState::finished);
}

TEST_CASE("a restart round: stop for restart, sweep, AgentDone, next assignment") {
  Machine a;
  a.run_round(0);
  const auto stopping = a.on(StopReceived{stop(true, 0, -1, "rank 3 failed")});
  CHECK(names(stopping) == "terminate");
  CHECK(the<TerminateRanks>(stopping).why == "rank 3 failed");
  CHECK(the<TerminateRanks>(stopping).grace_s == kGrace);
  CHECK(a.state() == AgentState::stopping_for_restart);

  CHECK(names(a.on(RanksEnded{})) == "sweep");
  CHECK(a.state() == AgentState::sweeping);
  CHECK(the<SendAgentDone>(a.on(LeftoversSwept{})).round == 0);
  CHECK(a.state() == AgentState::waiting_for_assignment);

  CHECK(names(a.on(AssignmentReceived{assignment(1)})) == "start");
  CHECK(a.state() == AgentState::running_round);
  a.on(RanksEnded{});
  CHECK(the<SendAgentDone>(a.on(LeftoversSwept{})).round == 1);
}

TEST_CASE("a restart Stop between rounds waits for the assignment") {
  Machine a;
  a.on(Joined{});
  CHECK(names(a.on(StopReceived{stop(true)})) == "");
  CHECK(a.state() == AgentState::waiting_for_assignment);
}

TEST_CASE("Stop during a round: ranks stopped with the Stop's grace, exit with its code") {
  Machine a;
  a.run_round();
  const auto stopping = a.on(StopReceived{stop(false, 3, 0, "rank 0 exited with code 3")});
  CHECK(names(stopping) == "announce terminate");
  CHECK(the<AnnounceStop>(stopping).reason == "rank 0 exited with code 3");
  CHECK(the<TerminateRanks>(stopping).grace_s == 0);
  CHECK(a.state() == AgentState::stopping_for_good);

  CHECK(names(a.on(RanksEnded{})) == "sweep");
  CHECK(a.state() == AgentState::sweeping_for_good);
  const auto swept = a.on(LeftoversSwept{});
  CHECK(names(swept) == "done finish");
  CHECK(the<Finish>(swept).exit_code == 3);
  CHECK(a.exit_code() == 3);
}

TEST_CASE("a second Stop changes the grace and the code but does not signal again") {
  Machine a;
  a.run_round();
  a.on(StopReceived{stop(true)});
  CHECK(names(a.on(StopReceived{stop(true)})) == "");  // no grace given: keep the timer
  CHECK(a.state() == AgentState::stopping_for_restart);

  const auto second = a.on(StopReceived{stop(false, 7, 2)});
  CHECK(names(second) == "kill_after");
  CHECK(the<KillAfter>(second).grace_s == 2);
  CHECK(a.state() == AgentState::stopping_for_good);

  CHECK(names(a.on(StopReceived{stop(false, 9, 0)})) == "kill_after");
  a.on(RanksEnded{});
  CHECK(the<Finish>(a.on(LeftoversSwept{})).exit_code == 9);
}

TEST_CASE("an assignment while ranks run is ignored with a warning") {
  Machine a;
  a.run_round(4);
  const auto ignored = a.on(AssignmentReceived{assignment(5)});
  CHECK(names(ignored) == "warn");
  CHECK(the<LogWarning>(ignored).text ==
        "ignoring an assignment while ranks of round 4 are running");
  CHECK(a.state() == AgentState::running_round);
}

TEST_CASE("a spare's assignment names another node rank than it joined with: it runs it") {
  Machine a;
  a.on(Joined{});
  auto spare = assignment();
  spare.node_rank = kNodeRank + 2;
  CHECK(names(a.on(AssignmentReceived{spare})) == "start");
  CHECK(a.state() == AgentState::running_round);
}

TEST_CASE("an assignment with another rank count fails the agent with code 2") {
  Machine a;
  a.on(Joined{});
  auto wrong = assignment();
  wrong.local_world_size = kNproc + 1;
  const auto refused = a.on(AssignmentReceived{wrong});
  CHECK(names(refused) == "error finish");
  CHECK(the<LogError>(refused).text ==
        "assignment does not match this node (3 ranks for node 1; this host runs 2)");
  CHECK(the<Finish>(refused).exit_code == 2);
}

TEST_CASE("coordinator lost during a round: stop the ranks, sweep, exit 1 without AgentDone") {
  Machine a;
  a.run_round();
  const auto lost = a.on(CoordinatorLost{"lost the coordinator"});
  CHECK(names(lost) == "error drop terminate");
  CHECK(the<LogError>(lost).text == "lost the coordinator; stopping this node's ranks");
  CHECK(the<TerminateRanks>(lost).grace_s == kGrace);
  CHECK(a.state() == AgentState::lost_coordinator);

  CHECK(names(a.on(CoordinatorLost{"stdin closed"})) == "");  // said once
  CHECK(names(a.on(RanksEnded{})) == "sweep");
  CHECK(a.state() == AgentState::sweeping_after_loss);
  const auto swept = a.on(LeftoversSwept{});
  CHECK(names(swept) == "finish");
  CHECK(the<Finish>(swept).exit_code == 1);
}

TEST_CASE("coordinator lost between rounds: exit 1 at once") {
  Machine a;
  a.on(Joined{});
  const auto lost = a.on(CoordinatorLost{"connection reset"});
  CHECK(names(lost) == "error drop finish");
  CHECK(the<LogError>(lost).text == "connection reset");
  CHECK(the<Finish>(lost).exit_code == 1);
}

TEST_CASE("coordinator lost while sweeping: exit at once") {
  Machine a;
  a.run_round();
  a.on(RanksEnded{});
  CHECK(names(a.on(CoordinatorLost{"gone"})) == "error drop finish");
  CHECK(a.exit_code() == 1);
}

TEST_CASE("coordinator lost after a final Stop keeps the Stop's code and logs nothing") {
  Machine a;
  a.run_round();
  a.on(StopReceived{stop(false, 4)});
  CHECK(names(a.on(CoordinatorLost{"closed"})) == "drop");
  CHECK(a.state() == AgentState::lost_coordinator);
  a.on(RanksEnded{});
  CHECK(the<Finish>(a.on(LeftoversSwept{})).exit_code == 4);
}

TEST_CASE("coordinator lost while stopping for a restart: the restart is off") {
  Machine a;
  a.run_round();
  a.on(StopReceived{stop(true)});
  const auto lost = a.on(CoordinatorLost{"closed"});
  CHECK(names(lost) == "error drop");
  CHECK(the<LogError>(lost).text == "closed; stopping this node's ranks");
  CHECK(a.state() == AgentState::lost_coordinator);
}

TEST_CASE(
    "stdin end-of-file is a lost coordinator, said by no error, and nothing after finishing") {
  Machine a;
  a.run_round();
  const std::string eof =
      "the coordinator closed this agent's input (dlaunch exited or its SSH connection dropped)";
  // Only a coordinator that chose to close it could read an error: none is written.
  CHECK(names(a.on(CoordinatorLost{eof, true})) == "drop terminate");
  a.on(RanksEnded{});
  a.on(LeftoversSwept{});
  CHECK(a.state() == AgentState::finished);
  CHECK(names(a.on(CoordinatorLost{eof, true})) == "");
  CHECK(names(a.on(StopSignalled{SIGTERM})) == "");
  CHECK(a.exit_code() == 1);
}

TEST_CASE("a stop signal during a round stops the ranks and exits 128+N") {
  Machine a;
  a.run_round();
  const auto stopping = a.on(StopSignalled{SIGTERM});
  CHECK(names(stopping) == "terminate");
  CHECK(the<TerminateRanks>(stopping).why == "agent received SIGTERM");
  CHECK(a.state() == AgentState::stopping_for_good);
  a.on(RanksEnded{});
  const auto swept = a.on(LeftoversSwept{});
  CHECK(names(swept) == "done finish");
  CHECK(the<Finish>(swept).exit_code == 128 + SIGTERM);
}

TEST_CASE("a stop signal between rounds exits at once") {
  Machine a;
  a.on(Joined{});
  const auto out = a.on(StopSignalled{SIGINT});
  CHECK(names(out) == "finish");
  CHECK(the<Finish>(out).exit_code == 130);
}

TEST_CASE("a stop signal decides the code even when the coordinator is gone") {
  Machine a;
  a.run_round();
  a.on(CoordinatorLost{"gone"});
  CHECK(names(a.on(StopSignalled{SIGINT})) == "");
  a.on(RanksEnded{});
  CHECK(the<Finish>(a.on(LeftoversSwept{})).exit_code == 130);
}

TEST_CASE("a reject fails the agent with code 2, stopping ranks if any") {
  SUBCASE("between rounds") {
    Machine a;
    const auto out = a.on(RejectReceived{"the coordinator refused this agent: bad secret"});
    CHECK(names(out) == "error finish");
    CHECK(the<LogError>(out).text == "the coordinator refused this agent: bad secret");
    CHECK(the<Finish>(out).exit_code == 2);
  }
  SUBCASE("during a round") {
    Machine a;
    a.run_round();
    CHECK(names(a.on(RejectReceived{"duplicate node"})) == "error terminate");
    CHECK(a.state() == AgentState::stopping_for_good);
    a.on(RanksEnded{});
    CHECK(the<Finish>(a.on(LeftoversSwept{})).exit_code == 2);
  }
}

TEST_CASE("a final Stop during the sweep exits without waiting for it") {
  Machine a;
  a.run_round();
  a.on(RanksEnded{});
  const auto out = a.on(StopReceived{stop(false, 0)});
  CHECK(names(out) == "finish");
  CHECK(a.state() == AgentState::finished);
  CHECK(names(a.on(LeftoversSwept{})) == "");  // the sweep was cancelled with everything else
}

TEST_CASE("every state has a name") {
  CHECK(std::string(to_string(AgentState::stopping_for_restart)) == "stopping for restart");
  CHECK(std::string(to_string(AgentState::finished)) == "finished");
}
