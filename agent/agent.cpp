#include "agent/agent.h"

#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>

#include "agent/gpus.h"
#include "agent/process.h"
#include "common/log.h"
#include "common/posix.h"
#include "common/socket.h"

namespace dlaunch {

namespace {
constexpr auto kDrainAfterExit = std::chrono::milliseconds(500);
constexpr auto kSweepStep = std::chrono::milliseconds(50);
constexpr int kSweepTermSteps = 20;     // SIGTERM leftovers, SIGKILL after ~1 s
constexpr int kSweepGiveUpSteps = 200;  // unkillable (D state): give up after ~10 s
}  // namespace

struct Agent::Rank {
  int local = 0;
  int global = 0;
  pid_t pid = -1;
  std::unique_ptr<asio::posix::stream_descriptor> out;
  std::unique_ptr<asio::posix::stream_descriptor> err;
  LineSplitter out_lines;
  LineSplitter err_lines;
  std::array<char, 16 * 1024> out_buffer{};
  std::array<char, 16 * 1024> err_buffer{};
  bool out_open = false;
  bool err_open = false;
  bool exited = false;
  int wait_status = 0;
  bool reported = false;
  std::unique_ptr<asio::steady_timer> drain_timer;
};

Agent::Agent(asio::io_context& io, LaunchSpec spec, int stdin_fd)
    : io_(io),
      spec_(std::move(spec)),
      child_signals_(io, SIGCHLD),
      stop_signals_(io, SIGINT, SIGTERM),
      grace_timer_(io),
      sweep_timer_(io) {
  if (stdin_fd >= 0) {
    asio::error_code ec;
    stdin_.emplace(io);
    stdin_->assign(::dup(stdin_fd), ec);
    if (ec) stdin_.reset();  // a regular file or /dev/null cannot be watched
  }
}

Agent::~Agent() = default;

void Agent::start() {
  // A hung-up terminal or SSH session must not kill the job by itself; the
  // coordinator's stdin and the TCP link decide that.
  std::signal(SIGHUP, SIG_IGN);
  std::signal(SIGPIPE, SIG_IGN);
  if (!become_subreaper())
    log::warn("cannot become a child subreaper; setsid grandchildren may escape");
  inherited_env_ = current_environment();
  gpus_ = count_gpus();
  nproc_ = spec_.nproc > 0 ? spec_.nproc : std::max(1, gpus_);
  watch_signals();
  watch_stdin();

  proto::Join join;
  join.node_rank = spec_.node_rank;
  join.nproc = nproc_;
  join.gpus = gpus_;
  join.host = spec_.host_name;
  join.master_port = find_free_port();
  join.pid = ::getpid();
  RendezvousClient::Options options;
  options.host = spec_.rdzv_host;
  options.port = spec_.rdzv_port;
  options.connect_deadline = std::chrono::seconds(spec_.rdzv_timeout_s);
  options.heartbeat_timeout = std::chrono::seconds(spec_.heartbeat_timeout_s);
  client_ = std::make_unique<RendezvousClient>(
      io_, options, spec_.secret, join,
      RendezvousClient::Callbacks{
          [this] { log::debug("joined the rendezvous as node ", spec_.node_rank); },
          [this](proto::Message&& m) { on_message(std::move(m)); },
          [this](const std::string& reason) { lose_coordinator(reason); }});
  client_->start();
}

void Agent::watch_signals() {
  child_signals_.async_wait([this](const asio::error_code& ec, int) {
    if (ec) return;
    reap_children();
    watch_signals();
  });
  stop_signals_.async_wait([this](const asio::error_code& ec, int signal) {
    if (ec) return;
    final_stop_ = true;
    final_code_ = 128 + signal;
    if (round_active_) {
      terminate_ranks("agent received " + signal_name(signal));
    } else {
      finish(final_code_);
    }
  });
}

void Agent::watch_stdin() {
  if (!stdin_) return;
  stdin_->async_read_some(
      asio::buffer(stdin_buffer_), [this](const asio::error_code& ec, std::size_t) {
        if (ec == asio::error::operation_aborted || finished_) return;
        if (ec) {
          lose_coordinator(
              "the coordinator closed this agent's input (dlaunch exited or its SSH connection "
              "dropped)");
          return;
        }
        watch_stdin();
      });
}

void Agent::on_message(proto::Message&& message) {
  if (auto* assign = std::get_if<proto::Assign>(&message)) {
    if (round_active_) {
      log::warn("ignoring an assignment while ranks of round ", assign_.round, " are running");
      return;
    }
    start_round(*assign);
  } else if (auto* stop = std::get_if<proto::Stop>(&message)) {
    if (!stop->restart) {
      final_stop_ = true;
      final_code_ = stop->exit_code;
      if (spec_.echo && !stop->reason.empty()) {
        std::fprintf(stderr, "dlaunch: %s\n", stop->reason.c_str());
      }
    }
    if (round_active_) {
      terminate_ranks(stop->reason);
      if (stop->grace_s >= 0) {
        grace_timer_.expires_after(std::chrono::seconds(stop->grace_s));
        grace_timer_.async_wait([this](const asio::error_code& ec) {
          if (!ec) kill_everything();
        });
      }
    } else if (final_stop_) {
      finish(final_code_);
    }
  } else if (auto* reject = std::get_if<proto::Reject>(&message)) {
    log::error("the coordinator refused this agent: ", reject->reason);
    final_stop_ = true;
    final_code_ = 2;
    if (round_active_) {
      terminate_ranks(reject->reason);
    } else {
      finish(final_code_);
    }
  }
}

void Agent::start_round(const proto::Assign& assign) {
  if (assign.node_rank != spec_.node_rank || assign.local_world_size != nproc_) {
    log::error("assignment does not match this node (node rank ", assign.node_rank, ", ",
               assign.local_world_size, " ranks)");
    final_code_ = 2;
    finish(2);
    return;
  }
  assign_ = assign;
  round_active_ = true;
  stopping_ = false;
  ranks_.clear();
  for (int local = 0; local < nproc_; ++local) {
    auto rank = std::make_unique<Rank>();
    rank->local = local;
    rank->global = assign.rank_offset + local;
    SpawnRequest request{spec_.argv, rank_environment(assign, local, spec_, inherited_env_),
                         spec_.workdir};
    try {
      const SpawnedProcess p = spawn_process(request);
      rank->pid = p.pid;
      rank->out = std::make_unique<asio::posix::stream_descriptor>(io_, p.stdout_fd);
      rank->err = std::make_unique<asio::posix::stream_descriptor>(io_, p.stderr_fd);
      rank->out_open = rank->err_open = true;
    } catch (const std::exception& e) {
      on_line(*rank, proto::Stream::err, std::string("dlaunch: cannot start rank: ") + e.what());
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
  reap_children();
  for (auto& rank : ranks_) maybe_report_exit(*rank);
}

void Agent::read_stream(Rank& rank, bool err) {
  auto& stream = err ? *rank.err : *rank.out;
  auto& buffer = err ? rank.err_buffer : rank.out_buffer;
  stream.async_read_some(
      asio::buffer(buffer), [this, &rank, err](const asio::error_code& ec, std::size_t n) {
        auto& lines = err ? rank.err_lines : rank.out_lines;
        const auto kind = err ? proto::Stream::err : proto::Stream::out;
        auto sink = [this, &rank, kind](std::string_view line) { on_line(rank, kind, line); };
        if (!ec) {
          lines.feed(std::string_view((err ? rank.err_buffer : rank.out_buffer).data(), n), sink);
          read_stream(rank, err);
          return;
        }
        lines.finish(sink);
        (err ? rank.err_open : rank.out_open) = false;
        asio::error_code ignored;
        (err ? rank.err : rank.out)->close(ignored);
        maybe_report_exit(rank);
      });
}

void Agent::on_line(const Rank& rank, proto::Stream stream, std::string_view line) {
  if (client_) client_->send(proto::LogLine{rank.global, stream, std::string(line)});
  if (spec_.echo) {
    std::FILE* f = stream == proto::Stream::err ? stderr : stdout;
    std::fprintf(f, "[%d] ", rank.global);
    std::fwrite(line.data(), 1, line.size(), f);
    std::fputc('\n', f);
    std::fflush(f);
  }
}

void Agent::reap_children() {
  int status = 0;
  pid_t pid;
  while ((pid = ::waitpid(-1, &status, WNOHANG)) > 0) {
    for (auto& rank : ranks_) {
      if (rank->pid == pid && !rank->exited) {
        rank->exited = true;
        rank->wait_status = status;
        maybe_report_exit(*rank);
      }
    }
    // Anything else was an orphaned descendant re-parented to us: reaped above.
  }
}

void Agent::maybe_report_exit(Rank& rank) {
  if (!rank.exited || rank.reported) return;
  if (rank.out_open || rank.err_open) {
    // A grandchild may hold the pipes open forever: give them a moment to
    // drain, then report the exit regardless.
    if (!rank.drain_timer) {
      rank.drain_timer = std::make_unique<asio::steady_timer>(io_, kDrainAfterExit);
      rank.drain_timer->async_wait([&rank](const asio::error_code& ec) {
        if (ec) return;
        asio::error_code ignored;
        if (rank.out_open) rank.out->cancel(ignored);
        if (rank.err_open) rank.err->cancel(ignored);
      });
    }
    return;
  }
  if (rank.drain_timer) rank.drain_timer->cancel();
  rank.reported = true;
  proto::RankExit exit;
  exit.rank = rank.global;
  if (WIFSIGNALED(rank.wait_status)) {
    exit.signal = WTERMSIG(rank.wait_status);
  } else {
    exit.exit_code = WIFEXITED(rank.wait_status) ? WEXITSTATUS(rank.wait_status) : 1;
  }
  if (client_) client_->send(exit);
  for (const auto& r : ranks_) {
    if (!r->reported) return;
  }
  round_over();
}

bool Agent::ranks_running() const {
  for (const auto& r : ranks_) {
    if (!r->exited) return true;
  }
  return false;
}

void Agent::terminate_ranks(const std::string& why) {
  if (stopping_) return;
  stopping_ = true;
  log::debug("stopping ranks: ", why);
  for (const auto& r : ranks_) {
    if (!r->exited) signal_group(r->pid, SIGTERM);
  }
  grace_timer_.expires_after(std::chrono::seconds(spec_.grace_s));
  grace_timer_.async_wait([this](const asio::error_code& ec) {
    if (!ec) kill_everything();
  });
}

void Agent::kill_everything() {
  if (!ranks_running()) return;
  for (const auto& r : ranks_) {
    if (!r->exited) signal_group(r->pid, SIGKILL);
  }
  signal_all(descendants_of(::getpid()), SIGKILL);
  // Keep at it until every rank is reaped (a fork racing the kill survives one pass).
  grace_timer_.expires_after(std::chrono::milliseconds(200));
  grace_timer_.async_wait([this](const asio::error_code& ec) {
    if (!ec) kill_everything();
  });
}

void Agent::round_over() {
  round_active_ = false;
  grace_timer_.cancel();
  // Descendants that outlived their rank (setsid daemons, workers that ignore
  // SIGTERM) were re-parented to us: they are part of the job, so end them.
  sweep_leftovers(0);
}

void Agent::sweep_leftovers(int step) {
  const auto left = descendants_of(::getpid());
  if (left.empty() || step >= kSweepGiveUpSteps) {
    if (!left.empty()) log::warn(left.size(), " leftover processes would not die");
    if (client_) client_->send(proto::AgentDone{assign_.round, find_free_port()});
    if (final_stop_) finish(final_code_);
    return;
  }
  signal_all(left, step < kSweepTermSteps ? SIGTERM : SIGKILL);
  if (step == 0) signal_all(left, SIGCONT);  // stopped processes cannot act on SIGTERM
  sweep_timer_.expires_after(kSweepStep);
  sweep_timer_.async_wait([this, step](const asio::error_code& ec) {
    if (!ec) sweep_leftovers(step + 1);
  });
}

void Agent::lose_coordinator(const std::string& why) {
  if (finished_ || lost_coordinator_) return;
  lost_coordinator_ = true;
  if (!final_stop_) {
    log::error(why, round_active_ ? "; stopping this node's ranks" : "");
    final_stop_ = true;
    final_code_ = 1;
  }
  client_.reset();
  if (round_active_) {
    terminate_ranks(why);
  } else {
    finish(final_code_);
  }
}

void Agent::finish(int code) {
  if (finished_) return;
  log::debug("agent finishing with exit code ", code);
  finished_ = true;
  exit_code_ = code;
  if (client_) client_->close("agent finished");
  asio::error_code ignored;
  child_signals_.cancel(ignored);
  stop_signals_.cancel(ignored);
  grace_timer_.cancel();
  sweep_timer_.cancel();
  if (stdin_) stdin_->cancel(ignored);
  drain_and_stop(std::chrono::steady_clock::now() + std::chrono::seconds(3));
}

void Agent::drain_and_stop(std::chrono::steady_clock::time_point deadline) {
  // Pending writes (the last log lines, AgentDone) get until `deadline` to flush.
  if (client_ && client_->connected() && std::chrono::steady_clock::now() < deadline) {
    sweep_timer_.expires_after(std::chrono::milliseconds(5));
    sweep_timer_.async_wait(
        [this, deadline](const asio::error_code&) { drain_and_stop(deadline); });
    return;
  }
  io_.stop();
}

int run_agent(LaunchSpec spec, int stdin_fd) {
  asio::io_context io;
  Agent agent(io, std::move(spec), stdin_fd);
  agent.start();
  io.run();
  return agent.exit_code();
}

}  // namespace dlaunch
