#include "agent/rank_supervisor.h"

#include <sys/wait.h>

#include <csignal>
#include <string>

#include "agent/line_splitter.h"
#include "agent/output_order.h"

namespace dlaunch {

struct RankSupervisor::Rank {
  int global = 0;
  pid_t pid = -1;
  std::unique_ptr<asio::posix::stream_descriptor> out;
  std::unique_ptr<asio::posix::stream_descriptor> err;
  LineSplitter out_lines;
  LineSplitter err_lines;
  OutputOrder order;              // keeps a long line of one stream whole
  OutputOrder::Sink to_callback;  // where `order` lets this rank's pieces go
  bool out_open = false;
  bool err_open = false;
  bool exited = false;
  int wait_status = 0;
  bool reported = false;
  std::unique_ptr<Timer> drain_timer;
  bool drain_waited = false;        // the exit was reported with its pipes still open
  std::unique_ptr<Timer> out_idle;  // shows a partial line after a pause
  std::unique_ptr<Timer> err_idle;
  bool out_idle_armed = false;
  bool err_idle_armed = false;
  SteadyClock::time_point out_last_read{};
  SteadyClock::time_point err_last_read{};
  // A pipe with a completed read that was not re-armed while output is paused.
  bool out_parked = false;
  bool err_parked = false;
};

RankSupervisor::RankSupervisor(asio::io_context& io, ProcessOps& ops, Callbacks callbacks,
                               SupervisorTimings timings)
    : io_(io),
      ops_(ops),
      callbacks_(std::move(callbacks)),
      timings_(timings),
      kill_timer_(io),
      sweep_timer_(io) {}

RankSupervisor::~RankSupervisor() = default;

void RankSupervisor::start(const std::vector<RankLaunch>& launches) {
  ranks_.clear();
  for (const auto& launch : launches) {
    auto rank = std::make_unique<Rank>();
    rank->global = launch.global_rank;
    rank->to_callback = [this, global = launch.global_rank](
                            proto::Stream stream, std::string_view text, proto::LineEnd end) {
      callbacks_.on_line(global, stream, text, end);
    };
    if (auto spawned = ops_.spawn(launch.request)) {
      const SpawnedProcess& p = *spawned;
      rank->pid = p.pid;
      rank->out = std::make_unique<asio::posix::stream_descriptor>(io_, p.stdout_fd);
      rank->err = std::make_unique<asio::posix::stream_descriptor>(io_, p.stderr_fd);
      rank->out_idle = std::make_unique<Timer>(io_);
      rank->err_idle = std::make_unique<Timer>(io_);
      rank->out_open = rank->err_open = true;
      if (!p.exec_failure.empty()) {
        callbacks_.on_line(rank->global, proto::Stream::err, p.exec_failure,
                           proto::LineEnd::newline);
      }
    } else {
      callbacks_.on_line(rank->global, proto::Stream::err,
                         "dlaunch: cannot start rank: " + spawned.error(), proto::LineEnd::newline);
      rank->exited = true;
      rank->wait_status = 127 << 8;
    }
    ranks_.push_back(std::move(rank));
  }
  for (auto& rank : ranks_) {
    if (rank->out_open) read_stream(*rank, false);
    if (rank->err_open) read_stream(*rank, true);
  }
  // Children may have exited before the SIGCHLD handler was armed for them.
  reap();
  for (auto& rank : ranks_) maybe_report_exit(*rank);
}

// Waits for the pipe to be readable, then reads it into the one buffer all
// pipes share: a rank's pipes cost no buffer of their own while they wait,
// and a read takes as much as a pipe holds (64 KiB), a quarter of the
// system calls of a 16 KiB buffer per pipe in an output flood.
void RankSupervisor::read_stream(Rank& rank, bool err) {
  auto& stream = err ? *rank.err : *rank.out;
  stream.async_wait(asio::posix::descriptor_base::wait_read, [this, &rank,
                                                              err](asio::error_code ec) {
    auto& lines = err ? rank.err_lines : rank.out_lines;
    const auto kind = err ? proto::Stream::err : proto::Stream::out;
    auto sink = [&rank, kind](std::string_view text, proto::LineEnd end) {
      rank.order.deliver(kind, text, end, rank.to_callback);
    };
    std::size_t n = 0;
    if (!ec) {
      if (!read_buffer_) read_buffer_ = std::make_unique_for_overwrite<char[]>(kPipeRead);
      n = (err ? *rank.err : *rank.out).read_some(asio::buffer(read_buffer_.get(), kPipeRead), ec);
    }
    if (!ec) {
      // The pieces sink straight from the buffer; those that wait are copied.
      lines.feed(std::string_view(read_buffer_.get(), n), sink);
      (err ? rank.err_last_read : rank.out_last_read) = SteadyClock::now();
      if (lines.has_pending() && !(err ? rank.err_idle_armed : rank.out_idle_armed))
        show_partial_when_idle(rank, err, timings_.partial_after_idle);
      if (paused_) {
        (err ? rank.err_parked : rank.out_parked) = true;
      } else {
        read_stream(rank, err);
      }
      return;
    }
    lines.finish(sink);
    rank.order.stream_closed(kind, rank.to_callback);
    (err ? rank.err_open : rank.out_open) = false;
    asio::error_code ignored;
    (err ? rank.err : rank.out)->close(ignored);
    maybe_report_exit(rank);
  });
}

// A line without its end (a prompt, a progress bar drawn with "\r" before
// its text) is shown once the rank has written nothing for a while. The timer
// is armed once and, while output keeps coming, moved on when it fires rather
// than re-armed on every read of a busy pipe.
void RankSupervisor::show_partial_when_idle(Rank& rank, bool err, SteadyClock::duration after) {
  auto& timer = err ? *rank.err_idle : *rank.out_idle;
  (err ? rank.err_idle_armed : rank.out_idle_armed) = true;
  timer.expires_after(after);
  timer.async_wait([this, &rank, err](const asio::error_code& ec) {
    if (ec) return;  // the rank is gone with its timer: touch nothing
    (err ? rank.err_idle_armed : rank.out_idle_armed) = false;
    auto& lines = err ? rank.err_lines : rank.out_lines;
    if (!lines.has_pending()) return;
    const auto idle = SteadyClock::now() - (err ? rank.err_last_read : rank.out_last_read);
    if (idle < timings_.partial_after_idle) {
      show_partial_when_idle(rank, err, timings_.partial_after_idle - idle);
      return;
    }
    if (paused_) {
      // The rank is not idle; we stopped reading it (flow control). The rest
      // of the line is in the pipe.
      show_partial_when_idle(rank, err, timings_.partial_after_idle);
      return;
    }
    const auto kind = err ? proto::Stream::err : proto::Stream::out;
    lines.flush_partial([&rank, kind](std::string_view text, proto::LineEnd end) {
      rank.order.deliver(kind, text, end, rank.to_callback);
    });
  });
}

void RankSupervisor::reap() {
  while (const auto child = ops_.reap_one()) {
    for (auto& rank : ranks_) {
      if (rank->pid == child->pid && !rank->exited) {
        rank->exited = true;
        rank->wait_status = child->wait_status;
        maybe_report_exit(*rank);
      }
    }
    // Anything else was an orphaned descendant re-parented to us: reaped above.
  }
}

void RankSupervisor::maybe_report_exit(Rank& rank) {
  if (!rank.exited || rank.reported) return;
  if ((rank.out_open || rank.err_open) && !rank.drain_waited) {
    if (!rank.drain_timer) {
      rank.drain_timer = std::make_unique<Timer>(io_, timings_.drain_after_exit);
      arm_drain_timer(rank);
    }
    return;
  }
  if (rank.drain_timer) rank.drain_timer->cancel();
  rank.order.flush(rank.to_callback);
  rank.reported = true;
  proto::RankExit exit;
  exit.rank = rank.global;
  if (WIFSIGNALED(rank.wait_status)) {
    exit.signal = WTERMSIG(rank.wait_status);
  } else {
    exit.exit_code = WIFEXITED(rank.wait_status) ? WEXITSTATUS(rank.wait_status) : 1;
  }
  callbacks_.on_exit(exit);
  for (const auto& r : ranks_) {
    if (!r->reported) return;
  }
  callbacks_.on_ranks_ended();
}

void RankSupervisor::arm_drain_timer(Rank& rank) {
  rank.drain_timer->async_wait([this, &rank](const asio::error_code& ec) {
    if (ec) return;
    if (paused_) {
      // Output held back by flow control is not a grandchild holding the
      // pipe: wait for it rather than cut it off.
      rank.drain_timer->expires_after(timings_.drain_after_exit);
      arm_drain_timer(rank);
      return;
    }
    // A descendant still holds the pipes: report the exit now, and keep
    // reading what it writes until it closes them or the sweep ends.
    rank.drain_waited = true;
    maybe_report_exit(rank);
  });
}

bool RankSupervisor::pipes_open() const {
  for (const auto& r : ranks_) {
    if (r->out_open || r->err_open) return true;
  }
  return false;
}

void RankSupervisor::stop_reading() {
  asio::error_code ignored;
  for (auto& r : ranks_) {
    if (r->out_open) r->out->cancel(ignored);
    if (r->err_open) r->err->cancel(ignored);
  }
}

void RankSupervisor::pause_output() {
  paused_ = true;
}

void RankSupervisor::resume_output() {
  if (!paused_) return;
  paused_ = false;
  for (auto& rank : ranks_) {
    if (rank->out_parked) {
      rank->out_parked = false;
      read_stream(*rank, false);
    }
    if (rank->err_parked) {
      rank->err_parked = false;
      read_stream(*rank, true);
    }
  }
}

std::vector<std::pair<int, pid_t>> RankSupervisor::running_ranks() const {
  std::vector<std::pair<int, pid_t>> out;
  for (const auto& r : ranks_)
    if (!r->exited && r->pid > 0) out.emplace_back(r->global, r->pid);
  return out;
}

bool RankSupervisor::ranks_running() const {
  for (const auto& r : ranks_) {
    if (!r->exited) return true;
  }
  return false;
}

void RankSupervisor::stop(std::chrono::milliseconds grace) {
  const auto stopped = ops_.stopped_groups();
  for (const auto& r : ranks_) {
    if (r->exited) continue;
    // A stopped rank (SIGSTOP, a debugger let go) would hold the SIGTERM
    // pending for the whole grace: it gets SIGCONT first, as Slurm's scancel
    // sends. Only a stopped one: a container's `podman run` passes every
    // signal on to its container, each from a thread of its own, and a
    // SIGCONT passed after the SIGTERM found the container gone and had runc
    // print `container not running` into the rank's output.
    if (stopped.contains(r->pid)) ops_.signal_group(r->pid, SIGCONT);
    ops_.signal_group(r->pid, SIGTERM);
  }
  kill_after(grace);
}

void RankSupervisor::kill_after(std::chrono::milliseconds grace) {
  kill_timer_.expires_after(grace);
  kill_timer_.async_wait([this](const asio::error_code& ec) {
    if (!ec) kill_everything();
  });
}

void RankSupervisor::kill_everything() {
  if (!ranks_running()) return;
  for (const auto& r : ranks_) {
    if (!r->exited) ops_.signal_group(r->pid, SIGKILL);
  }
  ops_.signal_pids(ops_.descendants(), SIGKILL);
  kill_after(timings_.kill_repeat);
}

void RankSupervisor::sweep() {
  kill_timer_.cancel();
  sweep_step(0);
}

void RankSupervisor::sweep_step(int step) {
  const auto left = ops_.descendants();
  if (step >= timings_.sweep_give_up_steps || (left.empty() && !pipes_open())) {
    // What the leftovers wrote before they died has been read (or never will be).
    stop_reading();
    callbacks_.on_swept(left.size());
    return;
  }
  if (!left.empty()) {
    if (step == 0) ops_.signal_pids(left, SIGCONT);  // stopped processes cannot act on SIGTERM
    ops_.signal_pids(left, step < timings_.sweep_term_steps ? SIGTERM : SIGKILL);
  }
  sweep_timer_.expires_after(timings_.sweep_step);
  sweep_timer_.async_wait([this, step](const asio::error_code& ec) {
    if (!ec) sweep_step(step + 1);
  });
}

void RankSupervisor::cancel_timers() {
  kill_timer_.cancel();
  sweep_timer_.cancel();
}

}  // namespace dlaunch
