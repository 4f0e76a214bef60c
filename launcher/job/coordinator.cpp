#include "launcher/job/coordinator.h"

#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <span>

#include "common/console.h"
#include "common/disk_space.h"
#include "common/exit_codes.h"
#include "common/heap_return.h"
#include "common/log.h"
#include "common/posix.h"
#include "common/text.h"
#include "launcher/plan/launch_spec_builder.h"
#include "protocol/launch_spec.h"

namespace dlaunch {
namespace {

JobPolicy::Config policy_config(const Plan& plan, const Options& options) {
  JobPolicy::Config config;
  auto& rdzv = config.rendezvous;
  rdzv.nnodes = plan.nnodes;
  rdzv.job = plan.job;
  rdzv.max_restarts = options.max_restarts;
  rdzv.master_addr = plan.master_addr;
  if (rdzv.master_addr.empty()) rdzv.master_addr = this_host_name();
  rdzv.fixed_master_port = plan.master_port.value_or(0);
  if (plan.mode == Mode::hosts) {
    for (const auto& n : plan.nodes) rdzv.node_names.push_back(n.host.name);
  }
  config.nodes.resize(static_cast<std::size_t>(plan.nnodes));
  for (std::size_t i = 0; i < config.nodes.size(); ++i)
    config.nodes[i].label = "node" + std::to_string(i);
  for (const auto& planned : plan.nodes) {
    auto& node = config.nodes[static_cast<std::size_t>(planned.node_rank)];
    node.agent_started_here = true;
    if (!planned.host.name.empty()) node.label = planned.host.name;
    node.behind_jump =
        !plan.rdzv_via_ssh && !planned.host.jump.empty() && planned.host.jump != "none";
    node.spare = planned.host.spare;
    node.address = planned.host.address;
  }
  config.min_nodes = options.min_nodes;
  config.max_nodes = options.max_nodes;
  config.node_fail_limit = options.node_fail_limit;
  config.join_timeout_s = options.join_timeout_s;
  config.label_from_join = plan.mode == Mode::manual;
  config.rdzv_timeout_s = options.rdzv_timeout_s;
  config.grace_s = options.grace_s;
  config.verbose = options.verbose > 0;
  config.ranks_filter = options.ranks_filter;
  config.probe_master = plan.probe_master;
  config.sync = !options.sync_dir.empty() || !options.image_file.empty();
  config.sync_what = options.image_file.empty() ? "--sync"
                     : options.sync_dir.empty() ? "--image-file"
                                                : "--image-file and --sync";
  config.carry_checkpoint = !options.checkpoint_dir.empty();
  rdzv.hold_for_network = plan.probe_master || config.sync || elastic(plan, options);
  rdzv.admit_late = elastic(plan, options);
  config.master_sources.configured = plan.configured_master;
  config.master_sources.configured_by = plan.configured_master_by;
  config.master_sources.node0_address = plan.node0_address;
  config.master_sources.all_nodes_local = plan.all_nodes_local;
  return config;
}

}  // namespace

Coordinator::Coordinator(asio::io_context& io, Settings settings, AgentTransports& transports,
                         LogSink& sink)
    : io_(io),
      s_(std::move(settings)),
      sink_(sink),
      policy_(policy_config(s_.plan, s_.options)),
      recorder_(s_.job_dir, s_.record),
      runner_(io, s_, transports, *this),
      suspend_signals_(io, SIGTSTP),
      flush_timer_(io) {
  if (!s_.options.tensorboard_dir.empty() && !s_.job_dir.empty())
    // Half of what the disk can spare each, with the checkpoints' copy: an
    // agent cannot fill the coordinator's disk through them.
    tensorboard_.emplace(
        s_.job_dir + "/tensorboard",
        FileMirror::Options{.max_bytes = spare_disk_bytes(s_.job_dir.c_str()) / 2});
  make_hang_watch();
}

void Coordinator::make_hang_watch() {
  const auto& o = s_.options;
  HangWatch::Settings settings;
  settings.job = s_.plan.job;
  settings.job_dir = s_.job_dir;
  settings.stall_after = o.hang_timeout.value_or(Options::kDefaultStallTime);
  settings.act = o.hang_timeout.has_value() && o.hang_timeout->count() > 0;
  if (!o.progress_pattern.empty()) {
    settings.progress.emplace(o.progress_pattern);  // checked when parsed
    settings.progress_text = o.progress_pattern;
  }
  HangWatch::Hooks hooks;
  hooks.status = [this] { return policy_.status(); };
  hooks.ranks = [this](const std::set<int>& wanted) {
    std::vector<StacksGathering::Asked> asked;
    const auto records = policy_.node_records();
    for (std::size_t node = 0; node < records.size(); ++node) {
      const auto& r = records[node];
      const auto conn = policy_.conn_of(static_cast<int>(node));
      if (!conn || r.first_rank < 0 || r.ranks <= 0) continue;
      StacksGathering::Asked a{*conn, r.host, {}};
      for (int rank = r.first_rank; rank < r.first_rank + r.ranks; ++rank)
        if (wanted.empty() || wanted.contains(rank)) a.ranks.push_back(rank);
      if (!a.ranks.empty()) asked.push_back(std::move(a));
    }
    return asked;
  };
  hooks.send = [this](ConnId conn, const proto::Message& m) { runner_.server().send(conn, m); };
  hooks.note = [](const std::string& text) { console().note(text); };
  hooks.set_stalled = [this](bool stalled) {
    policy_.set_stalled(stalled);
    recorder_.update(policy_);
  };
  hooks.hung = [this](const std::string& what, int suspect) {
    apply(policy_.on_hung(what, suspect));
  };
  hang_ = std::make_unique<HangWatch>(io_, std::move(settings), std::move(hooks));
}

Coordinator::~Coordinator() = default;

int Coordinator::run() {
  if (!start()) return result_.exit_code;
  runner_.run();
  return finish();
}

bool Coordinator::start() {
  watch_suspend();
  if (auto started = runner_.start(); !started) {
    result_.root_cause = started.error();
    console().error(result_.root_cause);
    result_.exit_code = kExitFailure;
    result_.finished = std::time(nullptr);
    recorder_.finish(policy_, result_);
    return false;
  }
  flush_logs_periodically();
  hang_->start();
  apply(policy_.start());
  return true;
}

int Coordinator::finish() {
  sink_.terminal().on_space(nullptr);
  hang_->stop();
  runner_.end();
  sink_.flush();
  result_ = policy_.result();
  result_.finished = std::time(nullptr);
  recorder_.finish(policy_, result_);
  return result_.exit_code;
}

// Rank files are block-buffered for throughput; flushing them a few times a
// second keeps `dlaunch logs -f` and `tail -f` current. Every 30 s the heap's
// free memory goes back too (common/heap_return.h), so that a multi-day job's
// RSS is what it uses, not what its busiest minute used.
void Coordinator::flush_logs_periodically() {
  constexpr auto kFlushEvery = std::chrono::milliseconds(250);
  constexpr unsigned kFlushesPerHeapReturn = 30'000 / kFlushEvery.count();
  flush_timer_.expires_after(kFlushEvery);
  flush_timer_.async_wait([this](const asio::error_code& ec) {
    if (ec) return;
    sink_.flush();
    if (++flushes_ % kFlushesPerHeapReturn == 0) return_free_heap();
    flush_logs_periodically();
  });
}

void Coordinator::on_join(ConnId conn, const proto::Join& join) {
  apply(policy_.on_join(conn, join));
}

void Coordinator::on_connection_closed(ConnId conn, const std::string& reason) {
  if (checkpoints_) checkpoints_->drop(conn);
  held_.erase(conn);
  hang_->on_connection_closed(conn);
  apply(policy_.on_connection_closed(conn, reason));
}

void Coordinator::on_timer(std::size_t which) {
  apply(policy_.on_timer(static_cast<JobTimer>(which)));
}

LaunchSpec Coordinator::launch_spec(const PlannedNode& planned, const LaunchContext& context) {
  PlannedNode node = planned;
  node.host.name = policy_.node_label(node.node_rank);
  return make_launch_spec(runner_.plan(), node, s_.options, context);
}

std::string Coordinator::node_label(int node) const {
  return policy_.node_label(node);
}

void Coordinator::on_agent_unreachable(int node, std::string what) {
  apply(policy_.on_agent_unreachable(node, std::move(what)));
}

void Coordinator::on_agent_exited(int node, int exit_code, const std::string& error,
                                  const AgentStderr& diagnostics) {
  apply(policy_.on_agent_exited(node, exit_code, error, diagnostics.last(5)));
}

// The rendezvous listens: what streams files through it starts, and the
// terminal's writer may now resume the agents' reading.
void Coordinator::on_listening() {
  if (!s_.options.checkpoint_dir.empty() && !s_.job_dir.empty())
    checkpoints_.emplace(s_.job_dir + "/checkpoint", runner_.server(),
                         spare_disk_bytes(s_.job_dir.c_str()) / 2);
  if (sink_.holds_ranks_back()) {
    // Called on the terminal's writer thread once it has caught up.
    sink_.terminal().on_space([this] {
      asio::post(io_, [this] {
        if (!reading_paused_) return;
        reading_paused_ = false;
        runner_.server().set_reading_paused(false);
      });
    });
  }
  if (!s_.sync && !s_.image) return;
  SyncStreams::Settings sync;
  // The image first: its load then runs before the directory arrives.
  if (s_.image)
    sync.transfers.push_back({s_.image, proto::SyncInto::image_cache, false, "--image-file"});
  if (s_.sync)
    sync.transfers.push_back({s_.sync, proto::SyncInto::workdir, s_.options.sync_delete});
  sync.nnodes = s_.plan.nnodes;
  sync.progress_line = !s_.options.detach && ::isatty(2) == 1;
  syncs_.emplace(
      std::move(sync), runner_.server(), [this](int node) { return policy_.node_label(node); },
      [this](ConnId conn, const proto::SyncDone& done, const std::string& what) {
        apply(policy_.on_sync_done(conn, done, what));
      });
}

void Coordinator::on_message(ConnId conn, proto::Message&& message) {
  if (auto* line = std::get_if<proto::LogLine>(&message)) {
    on_log_line(conn, *line);
  } else if (auto* exit = std::get_if<proto::RankExit>(&message)) {
    apply(policy_.on_rank_exit(conn, *exit, sink_.tail(exit->rank)));
  } else if (auto* done = std::get_if<proto::AgentDone>(&message)) {
    apply(policy_.on_agent_done(conn, *done));
  } else if (auto* report = std::get_if<proto::ProbeReport>(&message)) {
    apply(policy_.on_probe_report(conn, *report));
  } else if (auto* chunk = std::get_if<proto::FileChunk>(&message)) {
    on_file_chunk(conn, *chunk);
  } else if (auto* want = std::get_if<proto::SyncWant>(&message)) {
    if (const auto node = policy_.node_of(conn); node && syncs_)
      syncs_->on_want(*node, conn, *want);
  } else if (auto* synced = std::get_if<proto::SyncDone>(&message)) {
    if (const auto node = policy_.node_of(conn); node && syncs_)
      syncs_->on_done(*node, conn, *synced);
  } else if (auto* stacks = std::get_if<proto::StacksReport>(&message)) {
    hang_->on_report(conn, *stacks);
  } else if (auto* join = std::get_if<proto::Join>(&message)) {
    // A second Join on a joined connection (the server hands only the first
    // to on_join): the policy refuses it and drops the connection.
    apply(policy_.on_join(conn, *join));
  }
}

void Coordinator::perform(const job_action::StartSync& a) {
  if (syncs_) syncs_->start(a.node, a.conn);
}

// Output does not change the job's fate, so it bypasses the policy: the
// busiest path stays a lookup and a write.
void Coordinator::on_log_line(ConnId conn, const proto::LogLine& line) {
  const auto node = policy_.node_of(conn);
  if (!node) return;
  const std::string& host = policy_.node_label(*node);
  const auto local_rank = policy_.rendezvous().local_rank_of(conn, line.rank);
  if (!local_rank) return apply(policy_.on_foreign_rank(conn, "output", line.rank));
  sink_.line(line.rank, host, line.stream, line.text, line.end, *local_rank);
  hang_->on_line(line.text);
  // --no-skip: a terminal that falls behind holds the ranks back, through the
  // agents' bounded queues, instead of losing lines.
  if (sink_.holds_ranks_back() && !reading_paused_ && sink_.terminal_backlogged()) {
    reading_paused_ = true;
    runner_.server().set_reading_paused(true);
  }
}

// --tensorboard-dir and --checkpoint-dir: only the node that holds rank 0 has
// the files.
void Coordinator::on_file_chunk(ConnId conn, const proto::FileChunk& chunk) {
  const auto node = policy_.node_of(conn);
  const bool checkpoint = chunk.set == proto::FileSet::checkpoint;
  FileMirror* tensorboard = tensorboard_ ? &*tensorboard_ : nullptr;
  if (!node || (checkpoint ? !checkpoints_ : !tensorboard)) return;
  if (!policy_.rendezvous().owns_rank(conn, 0))
    return apply(
        policy_.on_foreign_rank(conn, checkpoint ? "a checkpoint file" : "a TensorBoard file", 0));
  const auto kept = checkpoint ? checkpoints_->keep(chunk) : tensorboard->write(chunk);
  if (!kept) log::warn(kept.error());
}

// The new node 0's Assign, and anything else for it, waits behind the
// checkpoint: the agent writes the files before it starts the ranks.
void Coordinator::perform(const job_action::CarryCheckpoint& a) {
  if (!checkpoints_) return;
  const std::string& host = policy_.node_label(a.node);
  held_[a.conn];
  const auto started = std::chrono::steady_clock::now();
  checkpoints_->carry(a.conn, [this, conn = a.conn, host, started](CheckpointRelay::Carried c) {
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    char took[32];
    std::snprintf(took, sizeof took, "%.1f s", seconds);
    console().note(c.files == 0
                       ? host + " is the new node 0; no checkpoint has been written yet"
                       : host + " is the new node 0: sent it the last checkpoint (" +
                             std::to_string(c.files) + (c.files == 1 ? " file, " : " files, ") +
                             human_bytes(c.bytes) + ", " + took + ")");
    release(conn);
  });
}

void Coordinator::release(ConnId conn) {
  auto it = held_.find(conn);
  if (it == held_.end()) return;
  JobActions sends = std::move(it->second);
  held_.erase(it);
  apply(sends);
}

void Coordinator::on_signal(int signal) {
  // `dlaunch stop --grace S` left its grace next to the record.
  const auto grace = signal == SIGTERM ? take_stop_request(s_.job_dir) : std::nullopt;
  apply(policy_.on_signal(signal, grace));
}

// A stopped coordinator answers no heartbeat, and its agents would stop every
// rank after --heartbeat-timeout: Ctrl-Z cannot pause a distributed job, so
// the job goes on and the user is told so (local agents ignore SIGTSTP too).
void Coordinator::watch_suspend() {
  suspend_signals_.async_wait([this](const asio::error_code& ec, int) {
    if (ec) return;
    console().note(
        "Ctrl-Z does not pause a job: a stopped dlaunch answers no heartbeat, and "
        "its agents would stop every rank after --heartbeat-timeout (" +
        std::to_string(s_.options.heartbeat_timeout_s) + " s). The job goes on; Ctrl-C stops it");
    watch_suspend();
  });
}

void Coordinator::apply(const JobActions& actions) {
  auto perform_here = [this](const auto& a) { perform(a); };
  const bool may_hold =
      !held_.empty() || std::any_of(actions.begin(), actions.end(), [](const JobAction& a) {
        return std::holds_alternative<job_action::CarryCheckpoint>(a);
      });
  if (!may_hold) {
    runner_.apply(actions, perform_here);
  } else {
    // One by one: a carry holds the sends to its connection that follow it.
    for (const auto& action : actions) {
      const auto* send = std::get_if<job_action::Send>(&action);
      if (auto it = send ? held_.find(send->to) : held_.end(); it != held_.end()) {
        it->second.push_back(action);
        continue;
      }
      runner_.apply(std::span<const JobAction>(&action, 1), perform_here);
    }
  }
  recorder_.update(policy_);
  // Ranks run: no progress line under their output, whatever spare (which
  // joined late, or never) is still receiving files.
  if (syncs_ && policy_.status() != JobStatus::pending) syncs_->finish();
}

void Coordinator::perform(const job_action::Note& a) {
  console().note(a.text);
}

void Coordinator::perform(const job_action::MarkRound& a) {
  sink_.mark_round(a.round);
}

void Coordinator::on_finish() {
  if (syncs_) syncs_->finish();
  hang_->stop();
  flush_timer_.cancel();
}

}  // namespace dlaunch
