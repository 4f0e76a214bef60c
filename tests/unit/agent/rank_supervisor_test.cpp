#include "agent/rank_supervisor.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <csignal>
#include <optional>
#include <string>
#include <vector>

#include "fake_process_ops.h"

using namespace dlaunch;
using namespace std::chrono_literals;
using dlaunch::testing::exited_status;
using dlaunch::testing::FakeProcessOps;

namespace {

struct Line {
  int rank;
  proto::Stream stream;
  std::string text;
  bool operator==(const Line&) const = default;
};

// A supervisor over fake processes, everything it reports recorded. Its
// timings are far longer than a test runs: a timer fires only when the test
// moves the clock (advance), never because the machine was slow.
struct Fixture {
  // The test clock before the supervisor arms any timer (members start in
  // this order).
  static bool test_clock() {
    use_test_clock();
    return true;
  }
  bool uses_test_clock = test_clock();
  asio::io_context io;
  FakeProcessOps ops;
  std::vector<Line> lines;
  std::vector<proto::RankExit> exits;
  int ranks_ended = 0;
  std::optional<std::size_t> swept_left_alive;
  RankSupervisor supervisor;

  static SupervisorTimings timings() {
    SupervisorTimings t;
    t.drain_after_exit = 1h;
    t.partial_after_idle = 1h;
    t.kill_repeat = 1min;
    t.sweep_step = 1min;
    t.sweep_term_steps = 5;
    t.sweep_give_up_steps = 20;
    return t;
  }

  Fixture()
      : supervisor(
            io, ops,
            RankSupervisor::Callbacks{
                [this](int rank, proto::Stream stream, std::string_view line, proto::LineEnd) {
                  lines.push_back({rank, stream, std::string(line)});
                },
                [this](const proto::RankExit& e) { exits.push_back(e); }, [this] { ++ranks_ended; },
                [this](std::size_t left) { swept_left_alive = left; }},
            timings()) {
    ops.on_child_exit = [this] { asio::post(io, [this] { supervisor.reap(); }); };
  }

  void start(int n, int first_global = 0, const std::string& program = "train") {
    std::vector<RankLaunch> launches;
    for (int i = 0; i < n; ++i) {
      launches.push_back(
          {first_global + i,
           SpawnRequest{{program, "--rank"}, {{"RANK", std::to_string(i)}}, "/work/dir"}});
    }
    supervisor.start(launches);
  }

  // Runs the event loop until `done` holds or `limit` passes; says which.
  template <class Pred>
  bool run_until(Pred done, std::chrono::milliseconds limit = 2000ms) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!done()) {
      if (std::chrono::steady_clock::now() >= deadline) return false;
      if (io.stopped()) io.restart();
      io.run_one_for(5ms);
    }
    return true;
  }

  void run_for(std::chrono::milliseconds d) {
    run_until([] { return false; }, d);
  }

  // Moves the clock by `by`, then runs what that made due.
  void advance(SteadyClock::duration by) {
    advance_test_clock(by);
    run_for(20ms);
  }

  // Moves the clock a step at a time until `done` holds; the steps it took,
  // or -1 when `max_steps` were not enough.
  template <class Pred>
  int advance_until(Pred done, SteadyClock::duration step, int max_steps = 100) {
    for (int taken = 0; taken <= max_steps; ++taken) {
      if (done()) return taken;
      advance(step);
    }
    return -1;
  }
};

}  // namespace

TEST_CASE("spawns every rank with its argv, environment and working directory") {
  Fixture f;
  f.start(3, 4);
  REQUIRE(f.ops.spawned.size() == 3);
  for (int i = 0; i < 3; ++i) {
    const auto& request = f.ops.process(f.ops.spawned[static_cast<std::size_t>(i)]).request;
    CHECK(request.argv == std::vector<std::string>{"train", "--rank"});
    CHECK(request.env.at("RANK") == std::to_string(i));
    CHECK(request.workdir == "/work/dir");
  }
  CHECK(f.exits.empty());
  CHECK(f.ranks_ended == 0);
}

TEST_CASE("output arrives line by line under the rank's global number and stream") {
  Fixture f;
  f.start(2, 10);
  f.ops.write(f.ops.spawned[0], proto::Stream::out, "epoch 1\nepo");
  f.ops.write(f.ops.spawned[1], proto::Stream::err, "warning\n");
  f.ops.write(f.ops.spawned[0], proto::Stream::out, "ch 2\n");
  REQUIRE(f.run_until([&] { return f.lines.size() == 3; }));
  CHECK(std::count(f.lines.begin(), f.lines.end(), Line{10, proto::Stream::out, "epoch 1"}) == 1);
  CHECK(std::count(f.lines.begin(), f.lines.end(), Line{10, proto::Stream::out, "epoch 2"}) == 1);
  CHECK(std::count(f.lines.begin(), f.lines.end(), Line{11, proto::Stream::err, "warning"}) == 1);
}

TEST_CASE("one rank exits: its exit is reported after its last line, the round goes on") {
  Fixture f;
  f.start(2);
  f.ops.write(f.ops.spawned[1], proto::Stream::out, "last words without newline");
  f.ops.exit(f.ops.spawned[1], exited_status(3));
  REQUIRE(f.run_until([&] { return f.exits.size() == 1; }));
  CHECK(f.exits[0].rank == 1);
  CHECK(f.exits[0].exit_code == 3);
  CHECK(f.exits[0].signal == 0);
  CHECK(f.lines == std::vector<Line>{{1, proto::Stream::out, "last words without newline"}});
  CHECK(f.ranks_ended == 0);

  f.ops.exit(f.ops.spawned[0], exited_status(0));
  REQUIRE(f.run_until([&] { return f.ranks_ended == 1; }));
  CHECK(f.exits.size() == 2);
  CHECK(f.exits[1].rank == 0);
  CHECK(f.exits[1].exit_code == 0);
}

TEST_CASE("an exit is reported after the drain delay when a grandchild holds the pipes") {
  Fixture f;
  f.start(1);
  const auto drain = Fixture::timings().drain_after_exit;
  f.ops.exit(f.ops.spawned[0], exited_status(0), /*keep_pipes_open=*/true);
  f.run_for(50ms);
  CHECK(f.ranks_ended == 0);
  f.advance(drain / 2);
  CHECK(f.ranks_ended == 0);  // the pipes are still open and the delay is not over
  f.advance(drain / 2 + 1s);
  REQUIRE(f.run_until([&] { return f.ranks_ended == 1; }));
  REQUIRE(f.exits.size() == 1);
  CHECK(f.exits[0].exit_code == 0);
}

TEST_CASE("a rank that cannot be started says why and exits 127") {
  Fixture f;
  f.ops.unstartable.insert("missing");
  f.start(2, 0, "missing");
  CHECK(f.ops.spawned.empty());
  REQUIRE(f.lines.size() == 2);
  CHECK(f.lines[0].stream == proto::Stream::err);
  CHECK(f.lines[0].text == "dlaunch: cannot start rank: no such file: missing");
  REQUIRE(f.exits.size() == 2);
  CHECK(f.exits[0].exit_code == 127);
  CHECK(f.ranks_ended == 1);  // at once: nothing is left to wait for
}

TEST_CASE("stop sends SIGTERM to each running rank's group; ranks that obey end the round") {
  Fixture f;
  f.start(2);
  f.ops.exit(f.ops.spawned[0], exited_status(0));
  REQUIRE(f.run_until([&] { return f.exits.size() == 1; }));
  f.supervisor.stop(1000ms);
  // SIGTERM alone: a container's `podman run` passes every signal on, and a
  // SIGCONT it passed after the SIGTERM met a container already gone.
  CHECK(f.ops.group_signals ==
        std::vector<std::pair<pid_t, int>>{{f.ops.spawned[1], SIGTERM}});  // not the exited one
  REQUIRE(f.run_until([&] { return f.ranks_ended == 1; }));
  CHECK(f.exits[1].signal == SIGTERM);
  CHECK(f.ops.count_signals(f.ops.group_signals, SIGKILL) == 0);
}

TEST_CASE("stop continues a stopped rank first, so that it ends on SIGTERM within the grace") {
  Fixture f;
  f.start(2);
  f.ops.process(f.ops.spawned[1]).stopped = true;  // SIGSTOP, Ctrl-Z
  f.supervisor.stop(1000ms);
  // As Slurm's scancel: SIGCONT, else the SIGTERM waits the whole grace.
  CHECK(f.ops.group_signals == std::vector<std::pair<pid_t, int>>{{f.ops.spawned[0], SIGTERM},
                                                                  {f.ops.spawned[1], SIGCONT},
                                                                  {f.ops.spawned[1], SIGTERM}});
  REQUIRE(f.run_until([&] { return f.ranks_ended == 1; }));
  CHECK(f.exits[0].signal == SIGTERM);
  CHECK(f.exits[1].signal == SIGTERM);
  CHECK(f.ops.count_signals(f.ops.group_signals, SIGKILL) == 0);
}

TEST_CASE("stop escalates to SIGKILL of the group and every descendant after the grace") {
  Fixture f;
  f.start(1);
  const pid_t rank = f.ops.spawned[0];
  f.ops.process(rank).ignores_term = true;
  const pid_t helper = f.ops.add_leftover(/*ignores_term=*/true);  // escaped the group
  const auto grace = 60s;
  f.supervisor.stop(grace);
  CHECK(f.ops.count_signals(f.ops.group_signals, SIGTERM) == 1);
  f.advance(grace - 1s);
  CHECK(f.ops.count_signals(f.ops.group_signals, SIGKILL) == 0);
  CHECK(f.ops.alive(rank));

  f.advance(2s);
  REQUIRE(f.run_until([&] { return f.ops.count_signals(f.ops.group_signals, SIGKILL) > 0; }));
  CHECK(f.ops.pid_signals == std::vector<std::pair<pid_t, int>>{{helper, SIGKILL}});
  REQUIRE(f.run_until([&] { return f.ranks_ended == 1; }));
  CHECK(f.exits[0].signal == SIGKILL);
}

TEST_CASE("SIGKILL is repeated until every rank is reaped") {
  Fixture f;
  f.start(1);
  const pid_t rank = f.ops.spawned[0];
  f.ops.process(rank).unkillable = true;
  const auto repeat = Fixture::timings().kill_repeat;
  f.supervisor.stop(0ms);
  REQUIRE(f.run_until([&] { return f.ops.count_signals(f.ops.group_signals, SIGKILL) == 1; }));
  // One more SIGKILL each kill_repeat, and none in between.
  for (int kills = 2; kills <= 4; ++kills) {
    f.advance(repeat / 2);
    CHECK(f.ops.count_signals(f.ops.group_signals, SIGKILL) == kills - 1);
    f.advance(repeat / 2 + 1ms);
    CHECK(f.ops.count_signals(f.ops.group_signals, SIGKILL) == kills);
  }
  f.ops.process(rank).unkillable = false;
  f.ops.exit(rank, dlaunch::testing::signalled_status(SIGKILL));
  REQUIRE(f.run_until([&] { return f.ranks_ended == 1; }));
  const int kills = f.ops.count_signals(f.ops.group_signals, SIGKILL);
  f.advance(repeat * 5);
  CHECK(f.ops.count_signals(f.ops.group_signals, SIGKILL) == kills);  // and then stops
}

TEST_CASE("kill_after replaces the grace (a Stop that says kill now)") {
  Fixture f;
  f.start(1);
  f.ops.process(f.ops.spawned[0]).ignores_term = true;
  f.supervisor.stop(1h);
  f.supervisor.kill_after(0ms);
  REQUIRE(f.run_until([&] { return f.ranks_ended == 1; }));
  CHECK(f.exits[0].signal == SIGKILL);
}

TEST_CASE("a sweep with nothing left over reports at once") {
  Fixture f;
  f.start(1);
  f.ops.exit(f.ops.spawned[0], exited_status(0));
  REQUIRE(f.run_until([&] { return f.ranks_ended == 1; }));
  f.supervisor.sweep();
  REQUIRE(f.swept_left_alive.has_value());
  CHECK(*f.swept_left_alive == 0);
  CHECK(f.ops.pid_signals.empty());
}

TEST_CASE("the sweep wakes and terminates leftovers") {
  Fixture f;
  const pid_t daemon = f.ops.add_leftover();
  f.supervisor.sweep();
  // SIGCONT too: a stopped process could not act on the SIGTERM.
  CHECK(f.ops.pid_signals ==
        std::vector<std::pair<pid_t, int>>{{daemon, SIGCONT}, {daemon, SIGTERM}});
  const auto step = Fixture::timings().sweep_step;
  CHECK(f.advance_until([&] { return f.swept_left_alive.has_value(); }, step) == 1);
  CHECK(*f.swept_left_alive == 0);
}

TEST_CASE("the sweep kills leftovers that ignore SIGTERM") {
  Fixture f;
  const pid_t stubborn = f.ops.add_leftover(/*ignores_term=*/true);
  f.supervisor.sweep();
  CHECK(f.ops.pid_signals ==
        std::vector<std::pair<pid_t, int>>{{stubborn, SIGCONT}, {stubborn, SIGTERM}});
  const auto t = Fixture::timings();
  // SIGTERM at each of sweep_term_steps steps, then SIGKILL, then one step to see it gone.
  CHECK(f.advance_until([&] { return f.swept_left_alive.has_value(); }, t.sweep_step) ==
        t.sweep_term_steps + 1);
  CHECK(*f.swept_left_alive == 0);
  CHECK(f.ops.count_signals(f.ops.pid_signals, SIGTERM) == t.sweep_term_steps);
  CHECK(f.ops.count_signals(f.ops.pid_signals, SIGKILL) == 1);
  CHECK_FALSE(f.ops.alive(stubborn));
}

TEST_CASE("the sweep gives up on leftovers that cannot be killed") {
  Fixture f;
  f.ops.add_leftover(false, /*unkillable=*/true);
  f.supervisor.sweep();
  const auto t = Fixture::timings();
  CHECK(f.advance_until([&] { return f.swept_left_alive.has_value(); }, t.sweep_step) ==
        t.sweep_give_up_steps);
  REQUIRE(f.swept_left_alive.has_value());
  CHECK(*f.swept_left_alive == 1);
  CHECK(f.ops.count_signals(f.ops.pid_signals, SIGTERM) == t.sweep_term_steps);
  CHECK(f.ops.count_signals(f.ops.pid_signals, SIGKILL) ==
        t.sweep_give_up_steps - t.sweep_term_steps);
}

TEST_CASE("the sweep ends a pending SIGKILL, and cancel_timers ends the sweep") {
  Fixture f;
  f.start(1);
  f.ops.process(f.ops.spawned[0]).ignores_term = true;
  f.supervisor.stop(1min);
  f.ops.exit(f.ops.spawned[0], exited_status(0));
  REQUIRE(f.run_until([&] { return f.ranks_ended == 1; }));
  f.ops.add_leftover(/*ignores_term=*/true);
  f.supervisor.sweep();
  f.supervisor.cancel_timers();
  f.advance(1h);
  CHECK(f.ops.count_signals(f.ops.group_signals, SIGKILL) == 0);
  CHECK(f.ops.count_signals(f.ops.pid_signals, SIGKILL) == 0);
  CHECK_FALSE(f.swept_left_alive.has_value());
}
