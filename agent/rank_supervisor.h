// Runs one node's ranks for a round: spawns them, forwards their output line by
// line, reports each exit once its output is drained, stops them with a grace
// (SIGTERM to each rank's process group, SIGKILL when the grace runs out), and
// afterwards sweeps descendants that outlived their rank. What to do next (a
// new round, exiting) is the caller's decision; this class only reports.
#pragma once

#include <asio.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "agent/process_ops.h"
#include "common/clock.h"
#include "protocol/messages.h"

namespace dlaunch {

struct SupervisorTimings {
  // A grandchild may hold a rank's pipes open forever: after the rank exits,
  // its output gets this long to drain before the exit is reported regardless.
  std::chrono::milliseconds drain_after_exit{500};
  // A line without its end yet is sent as it is after this long without output.
  std::chrono::milliseconds partial_after_idle{500};
  // SIGKILL is repeated this often until every rank is reaped: a fork racing
  // the kill survives one pass.
  std::chrono::milliseconds kill_repeat{200};
  std::chrono::milliseconds sweep_step{50};
  int sweep_term_steps = 20;      // SIGTERM leftovers, SIGKILL after ~1 s
  int sweep_give_up_steps = 200;  // unkillable (D state): give up after ~10 s
};

struct RankLaunch {
  int global_rank = 0;
  SpawnRequest request;
};

class RankSupervisor {
 public:
  struct Callbacks {
    std::function<void(int rank, proto::Stream stream, std::string_view text, proto::LineEnd end)>
        on_line;
    std::function<void(const proto::RankExit& exit)> on_exit;
    std::function<void()> on_ranks_ended;                  // every exit of the round reported
    std::function<void(std::size_t left_alive)> on_swept;  // left_alive: would not die
  };

  RankSupervisor(asio::io_context& io, ProcessOps& ops, Callbacks callbacks,
                 SupervisorTimings timings = {});
  ~RankSupervisor();

  // Starts a round's ranks; the previous round's must all have been reported.
  // A rank that cannot be started says why on its stderr and exits 127.
  void start(const std::vector<RankLaunch>& ranks);
  // Reaps exited children; call it when SIGCHLD arrives.
  void reap();
  // SIGTERM to every running rank's group; SIGKILL to them and every
  // descendant once `grace` has passed.
  void stop(std::chrono::milliseconds grace);
  // Replaces the time left before SIGKILL.
  void kill_after(std::chrono::milliseconds grace);
  // Ends pending kills and kills descendants left after the round: SIGCONT and
  // SIGTERM, SIGKILL after sweep_term_steps, on_swept when none is left or
  // after sweep_give_up_steps.
  void sweep();
  void cancel_timers();
  // Flow control: while paused, no rank pipe is read, so ranks block on their
  // writes exactly as on a slow terminal; nothing is dropped and nothing
  // grows. A rank's exit waits for its output as long as the pause lasts.
  void pause_output();
  void resume_output();
  bool output_paused() const { return paused_; }
  // The ranks of this round still running: global rank and process id.
  std::vector<std::pair<int, pid_t>> running_ranks() const;

 private:
  struct Rank;

  void read_stream(Rank& rank, bool err);
  void maybe_report_exit(Rank& rank);
  void arm_drain_timer(Rank& rank);
  void show_partial_when_idle(Rank& rank, bool err, SteadyClock::duration after);
  bool pipes_open() const;
  void stop_reading();
  bool ranks_running() const;
  void kill_everything();
  void sweep_step(int step);

  asio::io_context& io_;
  ProcessOps& ops_;
  Callbacks callbacks_;
  SupervisorTimings timings_;
  Timer kill_timer_;
  Timer sweep_timer_;
  std::vector<std::unique_ptr<Rank>> ranks_;
  bool paused_ = false;
  // What every pipe is read into (see read_stream), made on the first read.
  static constexpr std::size_t kPipeRead = 64 * 1024;
  std::unique_ptr<char[]> read_buffer_;
};

}  // namespace dlaunch
