#include "launcher/job/coordinator.h"

#include <sys/prctl.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>

#include "common/log.h"
#include "common/posix.h"
#include "launcher/plan/launch_spec_builder.h"
#include "launcher/transport/local_transport.h"
#include "launcher/transport/ssh_transport.h"
#include "protocol/launch_spec.h"

namespace dlaunch {
namespace {

constexpr int kLauncherFailure = 1;

void say(const std::string& line) {
  std::fflush(stdout);
  std::fprintf(stderr, "dlaunch: %s\n", line.c_str());
  std::fflush(stderr);
}

std::string last_lines(const std::string& text, std::size_t n) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    auto end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    if (end > start) lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  std::string out;
  for (std::size_t i = lines.size() > n ? lines.size() - n : 0; i < lines.size(); ++i) {
    out += (out.empty() ? "" : "\n") + lines[i];
  }
  return out;
}

}  // namespace

Coordinator::Coordinator(asio::io_context& io, Settings settings, LogSink& sink)
    : io_(io),
      s_(std::move(settings)),
      sink_(sink),
      signals_(io, SIGINT, SIGTERM),
      rdzv_timer_(io),
      stop_deadline_(io),
      restart_timer_(io),
      flush_timer_(io) {}

Coordinator::~Coordinator() = default;

int Coordinator::run() {
  std::signal(SIGHUP, SIG_IGN);  // a closed terminal or cron must not kill the job
  std::signal(SIGPIPE, SIG_IGN);
  // Local agents' orphans come to us if an agent is killed outright.
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  watch_signals();
  try {
    start_server();
  } catch (const std::exception& e) {
    say(std::string("error: cannot listen for the rendezvous on ") + s_.plan.rdzv_bind + ":" +
        std::to_string(s_.plan.rdzv_port) + ": " + e.what() +
        (s_.plan.rdzv_port ? " (is another job using it? choose another with --rdzv-port)" : ""));
    return kLauncherFailure;
  }
  start_agents();
  flush_logs_periodically();
  rdzv_timer_.expires_after(std::chrono::seconds(s_.options.rdzv_timeout_s));
  rdzv_timer_.async_wait([this](const asio::error_code& ec) {
    if (!ec) on_rendezvous_timeout();
  });
  io_.run();
  // Orphans of killed local agents were re-parented to us (we are a subreaper).
  if (local_) end_descendants();
  sink_.flush();
  result_.exit_code = exit_code_;
  result_.world_size = state_ ? state_->world_size() : 0;
  return exit_code_;
}

// Rank files are block-buffered for throughput; flushing them a few times a
// second keeps `dlaunch logs -f` and `tail -f` current.
void Coordinator::flush_logs_periodically() {
  flush_timer_.expires_after(std::chrono::milliseconds(250));
  flush_timer_.async_wait([this](const asio::error_code& ec) {
    if (ec) return;
    sink_.flush();
    flush_logs_periodically();
  });
}

void Coordinator::start_server() {
  RendezvousState::Config config;
  config.nnodes = s_.plan.nnodes;
  config.job = s_.plan.job;
  config.max_restarts = s_.options.max_restarts;
  config.master_addr = s_.plan.master_addr;
  if (config.master_addr.empty()) {
    char name[256] = {};
    ::gethostname(name, sizeof name - 1);
    config.master_addr = name;
  }
  config.fixed_master_port = s_.plan.master_port.value_or(0);
  if (s_.plan.mode == Mode::hosts) {
    for (const auto& n : s_.plan.nodes) config.node_names.push_back(n.host.name);
  }
  state_.emplace(config);

  const auto address = asio::ip::make_address(s_.plan.rdzv_bind);
  RendezvousServer::Options options;
  options.heartbeat_timeout = std::chrono::seconds(s_.options.heartbeat_timeout_s);
  server_ = std::make_unique<RendezvousServer>(
      io_, asio::ip::tcp::endpoint(address, static_cast<std::uint16_t>(s_.plan.rdzv_port)),
      s_.secret,
      RendezvousServer::Callbacks{
          [this](ConnId c, const proto::Join& j) { on_join(c, j); },
          [this](ConnId c, proto::Message&& m) { on_message(c, std::move(m)); },
          [this](ConnId c, const std::string& r) { on_close(c, r); }},
      options);
  log::debug("rendezvous listening on ", s_.plan.rdzv_bind, ":", server_->port());

  nodes_.resize(static_cast<std::size_t>(s_.plan.nnodes));
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    nodes_[i].plan.node_rank = static_cast<int>(i);
    nodes_[i].host_label = "node" + std::to_string(i);
  }
  for (const auto& planned : s_.plan.nodes) {
    auto& node = nodes_[static_cast<std::size_t>(planned.node_rank)];
    node.plan = planned;
    if (!planned.host.name.empty()) node.host_label = planned.host.name;
  }
}

void Coordinator::start_agents() {
  for (const auto& planned : s_.plan.nodes)
    start_agent(nodes_[static_cast<std::size_t>(planned.node_rank)]);
}

void Coordinator::start_agent(Node& node) {
  Transport* transport = nullptr;
  if (node.plan.local) {
    if (!local_) local_ = make_local_transport(io_);
    transport = local_.get();
  } else {
    if (!ssh_) {
      SshOptions o;
      o.parallel = s_.options.ssh_parallel;
      o.connect_timeout_s = s_.options.ssh_timeout_s;
      o.accept_new_host_keys = s_.options.accept_new_host_keys;
      ssh_ = make_ssh_transport(io_, o);
    }
    transport = ssh_.get();
  }
  const int node_rank = node.plan.node_rank;
  AgentLaunch launch;
  launch.agent_binary = s_.agent_binary;
  launch.make_stdin = [this, node_rank](const std::string& local_address) {
    const auto& n = nodes_[static_cast<std::size_t>(node_rank)];
    LaunchContext context;
    context.secret = s_.secret;
    context.rdzv_host = s_.plan.rdzv_connect.empty() ? local_address : s_.plan.rdzv_connect;
    context.rdzv_port = server_->port();
    char cwd[4096];
    if (::getcwd(cwd, sizeof cwd) != nullptr) context.local_workdir = cwd;
    PlannedNode planned = n.plan;
    planned.host.name = n.host_label;
    const LaunchSpec spec = make_launch_spec(s_.plan, planned, s_.options, context);
    return encode_launch_spec(spec);
  };
  AgentEvents events;
  events.on_stderr = [this, node_rank](std::string_view bytes) {
    auto& n = nodes_[static_cast<std::size_t>(node_rank)];
    n.stderr_text.append(bytes);
    if (n.stderr_text.size() > 64 * 1024) n.stderr_text.erase(0, n.stderr_text.size() - 32 * 1024);
    // The agent's own warnings matter to the user (it runs out of sight).
    std::string_view rest = bytes;
    while (!rest.empty()) {
      const auto nl = rest.find('\n');
      const std::string_view line = rest.substr(0, nl);
      if (!line.empty())
        std::fprintf(stderr, "[%s agent] %.*s\n", n.host_label.c_str(),
                     static_cast<int>(line.size()), line.data());
      if (nl == std::string_view::npos) break;
      rest.remove_prefix(nl + 1);
    }
  };
  events.on_exit = [this, node_rank](int code, const std::string& error) {
    on_agent_exit(nodes_[static_cast<std::size_t>(node_rank)], code, error);
  };
  node.handle = transport->start(node.plan.host, launch, std::move(events));
}

void Coordinator::on_join(ConnId conn, const proto::Join& join) {
  auto out = state_->on_join(conn, join);
  if (const auto* member = state_->member(conn)) {
    node_of_conn_[conn] = member->node_rank;
    auto& node = nodes_[static_cast<std::size_t>(member->node_rank)];
    node.conn = conn;
    if (s_.plan.mode == Mode::manual && !join.host.empty()) node.host_label = join.host;
    log::debug("node ", member->node_rank, " (", node.host_label, ") joined with ", join.nproc,
               " ranks");
  }
  send_all(out);
  if (state_->assigned() && phase_ == Phase::starting) {
    phase_ = Phase::running;
    rdzv_timer_.cancel();
    log::info("job ", s_.plan.job, ": ", state_->world_size(), " ranks on ", s_.plan.nnodes,
              " nodes, MASTER_ADDR=", state_->config().master_addr,
              " MASTER_PORT=", state_->master_port());
  }
}

void Coordinator::send_all(const std::vector<Outbound>& out) {
  for (const auto& o : out) {
    server_->send(o.to, o.message);
    if (std::holds_alternative<proto::Reject>(o.message)) {
      log::warn("refused an agent: ", std::get<proto::Reject>(o.message).reason);
      server_->close(o.to, "rejected");
    }
  }
}

Coordinator::Node* Coordinator::node_of(ConnId conn) {
  auto it = node_of_conn_.find(conn);
  return it == node_of_conn_.end() ? nullptr : &nodes_[static_cast<std::size_t>(it->second)];
}

std::string Coordinator::rank_label(int rank) {
  const auto* member = state_->member_of_rank(rank);
  const std::string host =
      member ? nodes_[static_cast<std::size_t>(member->node_rank)].host_label : std::string("?");
  return "rank " + std::to_string(rank) + " on " + host;
}

void Coordinator::on_message(ConnId conn, proto::Message&& message) {
  Node* node = node_of(conn);
  if (node == nullptr) return;
  if (auto* line = std::get_if<proto::LogLine>(&message)) {
    if (!state_->owns_rank(conn, line->rank)) {
      log::warn(node->host_label, " sent output for rank ", line->rank,
                ", which is not one of its ranks; dropped");
      return;
    }
    sink_.line(line->rank, node->host_label, line->stream, line->text);
  } else if (auto* exit = std::get_if<proto::RankExit>(&message)) {
    if (!state_->owns_rank(conn, exit->rank)) {
      log::warn(node->host_label, " reported an exit for rank ", exit->rank,
                ", which is not one of its ranks; ignored");
      return;
    }
    on_rank_exit(conn, *exit);
  } else if (auto* done = std::get_if<proto::AgentDone>(&message)) {
    // Restart rounds are begun by begin_next_round() once all are done, so
    // this never yields assignments by itself.
    send_all(state_->on_agent_done(conn, *done));
    if (state_->all_done() && phase_ == Phase::running && !failed_this_round_) {
      stop_job(0, "");
    } else if (state_->all_done() && phase_ == Phase::restarting) {
      begin_next_round();
    }
  }
}

void Coordinator::on_rank_exit(ConnId conn, const proto::RankExit& exit) {
  (void)conn;
  const bool failed = exit.signal != 0 || exit.exit_code != 0;
  if (s_.options.verbose > 0) {
    say(rank_label(exit.rank) + " exited with " +
        (exit.signal ? "signal " + signal_name(exit.signal)
                     : "code " + std::to_string(exit.exit_code)));
  }
  if (!failed || phase_ != Phase::running || failed_this_round_) return;
  const int code = exit.signal ? 128 + exit.signal : exit.exit_code;
  const std::string how = exit.signal ? "was killed by signal " + signal_name(exit.signal)
                                      : "exited with code " + std::to_string(exit.exit_code);
  fail(code, rank_label(exit.rank) + " " + how, exit.rank);
}

void Coordinator::fail(int code, const std::string& what, int rank) {
  if (phase_ == Phase::stopping) return;
  if (phase_ == Phase::restarting && rank < 0) {
    // A node lost between rounds cannot take part in the next one: give up
    // rather than wait for it forever.
    say("job " + s_.plan.job + " failed: " + what + " (while restarting)");
    result_.root_cause = what;
    stop_job(code, what);
    return;
  }
  if (failed_this_round_) return;
  failed_this_round_ = true;
  result_.root_cause = what;
  result_.root_cause_tail = rank >= 0 ? sink_.tail(rank) : std::vector<std::string>{};
  const bool restartable = rank >= 0 && state_->assigned() &&
                           state_->round() < s_.options.max_restarts && interrupts_ == 0;
  say(restartable
          ? what + "; restarting all ranks (restart " + std::to_string(state_->round() + 1) +
                " of " + std::to_string(s_.options.max_restarts) + ")"
          : "job " + s_.plan.job + " failed: " + what);
  if (!result_.root_cause_tail.empty()) {
    std::string block = "last lines of rank " + std::to_string(rank) + ":";
    for (const auto& l : result_.root_cause_tail) block += "\n  | " + l;
    say(block);
  }
  if (restartable) {
    phase_ = Phase::restarting;
    result_.restarts = state_->round() + 1;
    proto::Stop stop;
    stop.restart = true;
    stop.reason = what;
    for (const auto& n : nodes_) {
      if (n.conn) server_->send(*n.conn, stop);
    }
    if (state_->all_done()) begin_next_round();
    return;
  }
  stop_job(code, what);
}

void Coordinator::begin_next_round() {
  // Back off like torchrun between rounds, so a crash loop does not spin.
  const int round = state_->round();
  const auto delay = std::chrono::milliseconds(std::min(500 * (1 << std::min(round, 6)), 30'000));
  restart_timer_.expires_after(delay);
  restart_timer_.async_wait([this](const asio::error_code& ec) {
    if (ec || phase_ != Phase::restarting) return;
    auto out = state_->begin_restart();
    sink_.mark_round(state_->round());
    failed_this_round_ = false;
    phase_ = Phase::running;
    log::info("restart ", state_->round(), " of ", s_.options.max_restarts, ": starting all ranks");
    send_all(out);
  });
}

void Coordinator::stop_job(int code, const std::string& reason) {
  if (phase_ == Phase::stopping) return;
  phase_ = Phase::stopping;
  exit_code_ = code;
  rdzv_timer_.cancel();
  restart_timer_.cancel();
  proto::Stop stop;
  stop.exit_code = code;
  stop.reason = reason.empty() ? "" : "job " + s_.plan.job + " failed: " + reason;
  for (auto& n : nodes_) {
    if (n.conn && !n.conn_closed) server_->send(*n.conn, stop);
    // Agents that never joined learn it from their stdin.
    if (!n.conn && n.handle) n.handle->close_stdin();
  }
  // Agents stop their ranks within the grace period; past that, end them.
  stop_deadline_.expires_after(std::chrono::seconds(s_.options.grace_s + 5));
  stop_deadline_.async_wait([this](const asio::error_code& ec) {
    if (ec) return;
    for (auto& n : nodes_) {
      if (n.handle && !n.agent_gone) {
        log::warn("agent on ", n.host_label, " did not exit in time; killing it");
        n.handle->kill();
      }
    }
    finished_ = true;
    io_.stop();
  });
  check_finished();
}

void Coordinator::on_close(ConnId conn, const std::string& reason) {
  Node* node = node_of(conn);
  if (node == nullptr) return;
  node->conn_closed = true;
  if (phase_ == Phase::stopping) {
    check_finished();
    return;
  }
  // The agent is dead to us (silent, frozen, or its link is cut): end it now
  // rather than after the grace period; over SSH this closes its channel, so a
  // live agent behind a broken rendezvous link still stops its ranks.
  if (node->handle && !node->agent_gone) node->handle->kill();
  fail(kLauncherFailure,
       "lost the agent of node " + std::to_string(node->plan.node_rank) + " (" + node->host_label +
           "): " + reason,
       -1);
}

void Coordinator::on_agent_exit(Node& node, int code, const std::string& error) {
  node.agent_gone = true;
  if (node.handle) node.handle->close_stdin();
  if (phase_ == Phase::stopping) {
    check_finished();
    return;
  }
  std::string what;
  if (!error.empty()) {
    what = error;
  } else {
    what = "the agent on " + node.host_label + " exited with code " + std::to_string(code);
    const std::string tail = last_lines(node.stderr_text, 5);
    if (!tail.empty()) what += ": " + tail;
  }
  // A lost agent fails the job; its connection may not have noticed yet.
  fail(kLauncherFailure, what, -1);
  check_finished();
}

void Coordinator::check_finished() {
  if (phase_ != Phase::stopping || finished_) return;
  for (const auto& n : nodes_) {
    if (n.handle && !n.agent_gone) return;
    if (!n.handle && n.conn && !n.conn_closed) return;
  }
  finished_ = true;
  stop_deadline_.cancel();
  flush_timer_.cancel();
  signals_.cancel();
  server_->stop();
  io_.stop();
}

void Coordinator::watch_signals() {
  signals_.async_wait([this](const asio::error_code& ec, int signal) {
    if (ec) return;
    ++interrupts_;
    if (interrupts_ == 1) {
      say("received " + signal_name(signal) + ": stopping all ranks (again to kill them now)");
      failed_this_round_ = true;
      result_.root_cause = "interrupted by " + signal_name(signal);
      if (phase_ == Phase::stopping) {
        exit_code_ = 128 + signal;
      } else {
        stop_job(128 + signal, "interrupted by " + signal_name(signal));
      }
    } else {
      say("received " + signal_name(signal) + " again: killing all ranks now");
      proto::Stop stop;
      stop.exit_code = exit_code_;
      stop.grace_s = 0;
      for (auto& n : nodes_) {
        if (n.conn && !n.conn_closed) server_->send(*n.conn, stop);
      }
      stop_deadline_.expires_after(std::chrono::seconds(3));
      stop_deadline_.async_wait([this](const asio::error_code& e) {
        if (e) return;
        for (auto& n : nodes_) {
          if (n.handle && !n.agent_gone) n.handle->kill();
        }
        finished_ = true;
        io_.stop();
      });
    }
    watch_signals();
  });
}

void Coordinator::on_rendezvous_timeout() {
  if (state_->assigned() || phase_ != Phase::starting) return;
  std::string missing;
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (!nodes_[i].conn) missing += (missing.empty() ? "" : ", ") + nodes_[i].host_label;
  }
  fail(kLauncherFailure,
       "timed out after " + std::to_string(s_.options.rdzv_timeout_s) +
           " s waiting for nodes to join: " + missing +
           " (raise --rdzv-timeout, or check that they can reach the "
           "rendezvous port)",
       -1);
}

}  // namespace dlaunch
