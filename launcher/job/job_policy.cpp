#include "launcher/job/job_policy.h"

#include <algorithm>
#include <utility>

#include "common/exit_codes.h"
#include "common/posix.h"
#include "common/text.h"
#include "common/utf8.h"
#include "launcher/job/container_start_failure.h"
#include "launcher/plan/plan.h"

namespace dlaunch {

using agent_link::log_line;

namespace {

// Back off like torchrun between rounds, so a crash loop does not spin.
std::chrono::milliseconds restart_delay(int round) {
  return std::chrono::milliseconds(std::min(500 * (1 << std::min(round, 6)), 30'000));
}

Membership::Config membership_config(const JobPolicy::Config& config) {
  Membership::Config m;
  m.spare.assign(static_cast<std::size_t>(config.rendezvous.nnodes), false);
  for (std::size_t i = 0; i < m.spare.size() && i < config.nodes.size(); ++i)
    m.spare[i] = config.nodes[i].spare;
  const auto not_spare =
      static_cast<std::size_t>(std::count(m.spare.begin(), m.spare.end(), false));
  m.max_nodes = config.max_nodes != 0 ? config.max_nodes : not_spare;
  m.min_nodes = config.min_nodes != 0 ? config.min_nodes : m.max_nodes;
  m.node_fail_limit = config.node_fail_limit;
  return m;
}

}  // namespace

JobPolicy::JobPolicy(Config config)
    : config_(std::move(config)),
      rendezvous_(config_.rendezvous),
      membership_(membership_config(config_)) {
  nodes_.resize(static_cast<std::size_t>(config_.rendezvous.nnodes));
  for (std::size_t i = 0; i < nodes_.size() && i < config_.nodes.size(); ++i)
    nodes_[i].setup = config_.nodes[i];
}

JobActions JobPolicy::take() {
  return std::exchange(out_, {});
}

const std::string& JobPolicy::node_label(int node) const {
  return nodes_[static_cast<std::size_t>(node)].setup.label;
}

std::optional<int> JobPolicy::node_of(ConnId conn) const {
  auto it = node_of_conn_.find(conn);
  if (it == node_of_conn_.end()) return std::nullopt;
  return it->second;
}

JobResult JobPolicy::result() const {
  JobResult result = result_;
  result.exit_code = exit_code_;
  result.world_size = rendezvous_.world_size();
  return result;
}

JobStatus JobPolicy::status() const {
  if (finished_) return final_status(result());
  switch (phase_) {
    case Phase::starting:
      return JobStatus::pending;
    case Phase::restarting:
      return JobStatus::restarting;
    case Phase::running:
      return stalled_ ? JobStatus::stalled : JobStatus::running;
    case Phase::stopping:
      break;
  }
  return rendezvous_.assigned() ? JobStatus::running : JobStatus::pending;
}

std::vector<NodeRecord> JobPolicy::node_records() const {
  std::vector<NodeRecord> records;
  records.reserve(nodes_.size());
  const auto& members = rendezvous_.members();
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    const Node& n = nodes_[i];
    NodeRecord r;
    r.host = n.setup.label;
    r.node_rank = rendezvous_.node_rank_of(static_cast<int>(i));
    r.agent_pid = n.agent_pid;
    const auto* member = i < members.size() && members[i] ? &*members[i] : nullptr;
    if (member && rendezvous_.assigned() && r.node_rank >= 0) {
      r.first_rank = rendezvous_.rank_offset(r.node_rank);
      r.ranks = member->nproc;
      r.gpus = std::min(r.ranks, n.gpus);
    }
    if (membership_.retired(static_cast<int>(i))) {
      r.state = "retired";
    } else if (elastic() && r.node_rank < 0 && member) {
      r.state = "spare";
    } else if (member && member->done && rendezvous_.started() && r.node_rank >= 0) {
      r.state = "done";
    } else if (n.conn_closed || n.agent_gone) {
      r.state = n.conn ? "lost" : "failed";
    } else if (finished_) {
      // The job ended without this node saying it was done (killed after
      // its grace, or stopped before it began): not running any more.
      r.state = "stopped";
    } else {
      r.state = n.conn ? "running" : "pending";
    }
    records.push_back(std::move(r));
  }
  return records;
}

JobActions JobPolicy::start() {
  emit(job_action::ArmTimer{JobTimer::rendezvous, std::chrono::seconds(config_.rdzv_timeout_s)});
  emit(job_action::ArmTimer{JobTimer::waiting_report, kWaitingReport});
  if (elastic())
    emit(job_action::ArmTimer{JobTimer::join, std::chrono::seconds(config_.join_timeout_s)});
  return take();
}

JobActions JobPolicy::on_join(ConnId conn, const proto::Join& join) {
  if (finished_) return {};
  auto replies = rendezvous_.on_join(conn, join);
  if (const auto* member = rendezvous_.member(conn)) {
    node_of_conn_[conn] = member->index;
    auto& node = nodes_[static_cast<std::size_t>(member->index)];
    node.conn = conn;
    settle(node);
    if (node.unreachable) {
      node.unreachable.reset();
      --unreachable_;
    }
    node.probe_port = join.probe_port;
    node.agent_pid = join.pid;
    node.gpus = join.gpus;
    // Joined after the job was stopped (thousands still arriving when a probe
    // fails): told at once, or the job would wait out its stop deadline for it.
    if (phase_ == Phase::stopping && last_stop_) {
      // Nothing of the rendezvous's answer: its last join may complete the
      // world and assign ranks that must not start.
      emit(job_action::Send{conn, *last_stop_});
      return take();
    }
    node.interfaces = join.interfaces;
    if (config_.label_from_join && !join.host.empty()) node.setup.label = join.host;
    if (!check_machine_listed_once(member->index, join)) return take();
    if (phase_ != Phase::starting || roster_chosen_) {
      // Elastic, after the first roster: a spare for the rounds to come.
      membership_note(node.setup.label + " joined after the start: a spare for the next round");
    }
    // Built only when shown: thousands of joins a second on a big job.
    if (log::enabled(log::Level::debug)) {
      emit(log_line(log::Level::debug, "node ", member->index, " (", node.setup.label,
                    ") joined with ", join.nproc, " ranks"));
    }
    // A spare that joins after the start gets the same files, ready for the
    // round it may be needed in (ready_hosts counts only synced nodes).
    if (config_.sync && !node.sync_started && (phase_ == Phase::starting || elastic())) {
      node.sync_started = true;
      ++sync_pending_;
      emit(job_action::StartSync{conn, member->index});
    }
  }
  send_all(replies);
  // The last node that was still on its way has arrived: the rest cannot.
  fail_if_none_is_coming();
  if (elastic()) {
    maybe_choose_roster();
  } else if (config_.probe_master && phase_ == Phase::starting && !rendezvous_.assigned()) {
    if (probe_) {
      if (const auto index = node_of(conn))
        send_probes(probe_->on_joined(static_cast<std::size_t>(*index)));
    } else if (!probe_sent_) {
      start_probe();
    }
  } else {
    // A rendezvous held for --sync (or a MIN:MAX that spans every host) goes
    // as soon as nothing else is waited for.
    maybe_assign();
  }
  if (rendezvous_.assigned() && phase_ == Phase::starting) on_assigned();
  return take();
}

JobActions JobPolicy::on_agent_unreachable(int index, std::string what) {
  auto& node = nodes_[static_cast<std::size_t>(index)];
  if (finished_ || node.conn || node.agent_gone) return {};
  if (!node.unreachable) ++unreachable_;
  node.unreachable = std::move(what);
  settle(node);
  fail_if_none_is_coming();
  return take();
}

void JobPolicy::fail_if_none_is_coming() {
  if (unreachable_ == 0 || phase_ != Phase::starting || rendezvous_.assigned() || roster_chosen_)
    return;
  // An elastic job may start without them.
  maybe_choose_roster();
  if (roster_chosen_ || finished_ || phase_ != Phase::starting) return;
  const auto missing = nodes_.size() - static_cast<std::size_t>(rendezvous_.joined());
  if (unreachable_ < missing) return;
  // Every node still missing is trying and failing: none of them is on its way.
  std::string each;
  std::size_t named = 0;
  for (const auto& n : nodes_) {
    if (!n.unreachable) continue;
    if (++named > 20) {
      each += " and " + std::to_string(missing - 20) + " more";
      break;
    }
    each += (each.empty() ? "" : "; ") + n.setup.label + ": " + *n.unreachable;
  }
  fail(kExitFailure,
       std::to_string(missing) + (missing == 1 ? " node cannot" : " nodes cannot") +
           " reach the rendezvous, and no other is missing: " + each +
           " (a firewall between the hosts and this machine?" + jump_host_hint() + ")",
       -1, {});
}

// Two agents of one machine each number its GPUs from 0: on a GPU machine
// their ranks would share GPU 0, never what was meant, so the job stops before
// any rank starts. CPU-only machines listed many times are how tests and
// small runs are made: said once.
bool JobPolicy::check_machine_listed_once(int node_rank, const proto::Join& join) {
  if (join.machine_id.empty()) return true;
  const auto [it, first] = node_of_machine_.try_emplace(join.machine_id, node_rank);
  if (first || it->second == node_rank) return true;
  const int a = std::min(it->second, node_rank), b = std::max(it->second, node_rank);
  const std::string both =
      "nodes " + std::to_string(a) + " (" + nodes_[static_cast<std::size_t>(a)].setup.label +
      ") and " + std::to_string(b) + " (" + nodes_[static_cast<std::size_t>(b)].setup.label +
      ") are the same machine (one /etc/machine-id and boot id)";
  if (join.gpus > 0) {
    fail(kExitUsage,
         both +
             ": each agent would give its ranks GPU 0 onwards, so two ranks would share a GPU;"
             " list the machine once, with slots for all its GPUs",
         -1, {});
    return false;
  }
  if (!warned_same_machine_) {
    warned_same_machine_ = true;
    emit(log_line(log::Level::warn, both,
                  ": fine on a machine without GPUs, where their ranks share its CPUs"));
  }
  return true;
}

JobActions JobPolicy::on_sync_done(ConnId conn, const proto::SyncDone& done,
                                   const std::string& what) {
  const auto index = node_of(conn);
  const bool late = phase_ == Phase::running || phase_ == Phase::restarting;
  if (finished_ || !index || (phase_ != Phase::starting && !late)) return {};
  auto& node = nodes_[static_cast<std::size_t>(*index)];
  if (!node.sync_started || node.synced || membership_.retired(*index)) return {};
  if (late && !done.error.empty()) {
    // A spare that cannot be made the same as the others is not used; the
    // running job goes on without it.
    --sync_pending_;
    node.sync_started = false;  // ended: not waited for, not counted again if lost
    note(what + " to " + node.setup.label + " failed: " + done.error +
         "; it joined after the start and is not used");
    return take();
  }
  if (!done.error.empty()) {
    fail(kExitFailure, what + " to " + node.setup.label + " failed: " + done.error, -1, {});
    return take();
  }
  node.synced = true;
  ++synced_;
  --sync_pending_;
  emit(log_line(log::Level::info, config_.sync_what, " to ", node.setup.label, ": ",
                done.files_written, " files written, ", done.bytes_received, " bytes sent, ",
                done.deleted, " deleted"));
  maybe_assign();
  return take();
}

std::vector<bool> JobPolicy::ready_hosts() const {
  std::vector<bool> ready(nodes_.size());
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    const Node& n = nodes_[i];
    ready[i] = n.conn && !n.conn_closed && !n.agent_gone && (!config_.sync || n.synced);
  }
  return ready;
}

std::vector<std::string> JobPolicy::labels() const {
  std::vector<std::string> labels;
  labels.reserve(nodes_.size());
  for (const auto& n : nodes_) labels.push_back(n.setup.label);
  return labels;
}

// An elastic job picks its first roster once no host is still on its way, or
// at --join-timeout from those that joined; with fewer than MIN by then it
// waits on, up to --rdzv-timeout, and starts as soon as MIN have joined.
void JobPolicy::maybe_choose_roster() {
  if (!elastic() || roster_chosen_ || phase_ != Phase::starting) return;
  const bool coming = settled_ < nodes_.size();
  if (coming && !join_timed_out_) return;
  // Lost hosts have left the rendezvous: joined() counts those that can run.
  if (coming && static_cast<std::size_t>(rendezvous_.joined()) < membership_.config().min_nodes)
    return;
  std::vector<bool> joined(nodes_.size());
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    const Node& n = nodes_[i];
    joined[i] = n.conn && !n.conn_closed && !n.agent_gone;
  }
  auto first = membership_.first_round(joined, labels());
  if (!first) {
    if (coming) return;
    if (unreachable_ > 0) return;  // fail_if_none_is_coming names each with its error
    fail(kExitFailure, "cannot start: " + first.error() + "; missing: " + missing_nodes(50), -1,
         {});
    return;
  }
  auto& round = *first;
  roster_chosen_ = true;
  emit(job_action::CancelTimer{JobTimer::join});
  rendezvous_.set_roster(round.roster);
  for (auto& change : round.changes) membership_note(std::move(change));
  const auto& m = membership_.config();
  if (round.roster.size() < m.max_nodes) {
    membership_note("starting on " + std::to_string(round.roster.size()) + " nodes (" +
                    std::to_string(m.min_nodes) + " to " + std::to_string(m.max_nodes) +
                    "); not joined: " + missing_nodes(20));
  }
  if (config_.probe_master) {
    start_probe();
  } else {
    maybe_assign();
  }
}

// Ranks start once the network is known (when probed) and every node's
// --sync is done (when asked for).
void JobPolicy::maybe_assign() {
  if (phase_ != Phase::starting || rendezvous_.assigned()) return;
  if (elastic() ? !roster_chosen_ : !rendezvous_.all_joined()) return;
  // An elastic job's spares too: any of them may run ranks in a later round.
  if (config_.sync && (elastic() ? sync_pending_ > 0 : synced_ < nodes_.size())) return;
  if (config_.probe_master) {
    if (!network_) return;
    send_all(rendezvous_.assign_with_network(network_->first, network_->second));
  } else if (config_.rendezvous.hold_for_network) {
    // Held for the sync or the roster, and nothing else to wait for.
    send_all(rendezvous_.assign_with_network(rendezvous_.master_addr(), {}));
  }
  if (rendezvous_.assigned() && phase_ == Phase::starting) on_assigned();
}

void JobPolicy::on_assigned() {
  phase_ = Phase::running;
  checkpoint_host_ = master_host();
  emit(job_action::CancelTimer{JobTimer::rendezvous});
  emit(job_action::CancelTimer{JobTimer::waiting_report});
  emit(log_line(log::Level::info, "job ", config_.rendezvous.job, ": ", rendezvous_.world_size(),
                " ranks on ", config_.rendezvous.nnodes, " nodes, MASTER_ADDR=",
                rendezvous_.master_addr(), " MASTER_PORT=", rendezvous_.master_port()));
  warn_about_ranks_filter();
}

void JobPolicy::send_all(const std::vector<Outbound>& out) {
  for (const auto& o : out) {
    emit(job_action::Send{o.to, o.message});
    if (const auto* reject = std::get_if<proto::Reject>(&o.message)) {
      emit(log_line(log::Level::warn, "refused an agent: ", reject->reason));
      emit(job_action::CloseConnection{o.to, "rejected"});
    }
  }
}

// Ranks asked for with --ranks-filter that the job does not have would print
// nothing, silently: say so once the world size is known.
void JobPolicy::warn_about_ranks_filter() {
  if (auto inside = ranks_outside_world(config_.ranks_filter, rendezvous_.world_size()); !inside)
    emit(log_line(log::Level::warn, inside.error(), "; those print nothing"));
}

// The one way every node is told to stop: those still connected get the
// message; the others are stopped by the caller's own means.
void JobPolicy::stop_every_node(const proto::Stop& stop) {
  last_stop_ = dlaunch::stop_every_node(nodes_, stop, UnlinkedNodes::left,
                                        [this](auto action) { emit(std::move(action)); });
}

std::string JobPolicy::rank_label(int rank) const {
  const auto* member = rendezvous_.member_of_rank(rank);
  const std::string host = member ? node_label(member->index) : std::string("?");
  return "rank " + std::to_string(rank) + " on " + host;
}

JobActions JobPolicy::on_rank_exit(ConnId conn, const proto::RankExit& exit,
                                   std::vector<std::string> last_lines) {
  const auto node = node_of(conn);
  if (finished_ || !node) return {};
  if (!rendezvous_.owns_rank(conn, exit.rank)) return on_foreign_rank(conn, "an exit", exit.rank);
  const bool failed = exit.signal != 0 || exit.exit_code != 0;
  if (config_.verbose) {
    note(rank_label(exit.rank) + " exited with " +
         (exit.signal ? "signal " + signal_name(exit.signal)
                      : "code " + std::to_string(exit.exit_code)));
  }
  if (!failed || phase_ != Phase::running || failed_this_round_) return take();
  int code = exit.signal ? 128 + exit.signal : exit.exit_code;
  std::string how = exit.signal ? "was killed by signal " + signal_name(exit.signal)
                                : "exited with code " + std::to_string(exit.exit_code);
  // Its container's init could not start the program: 127, as a shell says
  // for a program it cannot find, and the reason in the message.
  if (exit.signal == 0 && exit.exit_code == 1) {
    if (const auto reason = container_start_failure(last_lines)) {
      code = 127;
      how = "could not start its program in its container: " + *reason +
            " (is the program in the image?)";
    }
  }
  // torch's @record wrote the exception: that, not the last lines, is the cause.
  tail_is_error_file_ = !exit.error.empty();
  if (tail_is_error_file_) {
    last_lines.clear();
    for (const auto& line : split_lines(exit.error)) last_lines.push_back(escape_unprintable(line));
  }
  fail(code, rank_label(exit.rank) + " " + how, exit.rank, std::move(last_lines));
  // --node-fail-limit: the node whose rank failed first in the round counts
  // it; at the limit, a spare takes its place in the next round.
  if (elastic() && membership_.count_failure(*node))
    membership_note(node_label(*node) + " is retired: " + "its ranks failed in " +
                    std::to_string(config_.node_fail_limit) + " rounds (--node-fail-limit)");
  return take();
}

JobActions JobPolicy::on_hung(const std::string& what, int suspect) {
  if (finished_ || phase_ != Phase::running || failed_this_round_) return {};
  stalled_ = false;
  result_.hung = true;
  // With spares, the suspect's node is retired as a lost node is, and the
  // next round runs without it (its agent is told to stop like every other).
  const auto* member = suspect >= 0 ? rendezvous_.member_of_rank(suspect) : nullptr;
  const bool restartable = rendezvous_.round() < config_.rendezvous.max_restarts;
  if (elastic() && restartable && member != nullptr && lose_node(member->index, what))
    return take();
  // Restartable as a failed rank is: the suspect's, else rank 0's place.
  fail(kExitHung, what, std::max(suspect, 0), {});
  return take();
}

std::optional<ConnId> JobPolicy::conn_of(int node) const {
  const auto& n = nodes_[static_cast<std::size_t>(node)];
  if (!n.conn || n.conn_closed) return std::nullopt;
  return n.conn;
}

JobActions JobPolicy::on_foreign_rank(ConnId conn, std::string_view what, int rank) {
  const auto index = node_of(conn);
  // A retired node's agent (a hung rank's) is told to stop: the ends of the
  // ranks it held come after they stopped being its own, as expected.
  if (finished_ || !index || membership_.retired(*index)) return {};
  auto& node = nodes_[static_cast<std::size_t>(*index)];
  const std::size_t count = ++node.foreign_ranks;
  const std::string& host = node.setup.label;
  if (count <= kForeignRanksSaid) {
    emit(log_line(log::Level::warn, host, " sent ", what, " for rank ", rank,
                  ", which is not one of its ranks; ignored",
                  count == kForeignRanksSaid ? " (more such from it are not shown)" : ""));
  } else if (count == kForeignRankLimit) {
    const std::string reason =
        "sent " + std::to_string(count) + " messages for ranks that are not its own";
    emit(log_line(log::Level::warn, host, " ", reason, "; its connection is closed"));
    emit(job_action::CloseConnection{conn, reason});
  }
  return take();
}

JobActions JobPolicy::on_agent_done(ConnId conn, const proto::AgentDone& done) {
  if (finished_ || !node_of(conn)) return {};
  // Restart rounds are begun by start_next_round() once all are done, so this
  // never yields assignments by itself.
  send_all(rendezvous_.on_agent_done(conn, done));
  if (rendezvous_.all_done() && phase_ == Phase::running && !failed_this_round_) {
    stop_job(0, "");
  } else if (rendezvous_.all_done() && phase_ == Phase::restarting) {
    begin_next_round();
  }
  return take();
}

void JobPolicy::fail(int code, const std::string& cause, int rank, std::vector<std::string> tail,
                     bool node_lost) {
  std::string what = cause;
  if (phase_ == Phase::stopping) return;
  if (phase_ == Phase::restarting && rank < 0) {
    // A node lost between rounds cannot take part in the next one: give up
    // rather than wait for it forever.
    note("job " + config_.rendezvous.job + " failed: " + what + " (while restarting)");
    result_.root_cause = what;
    stop_job(code, what);
    return;
  }
  if (failed_this_round_) return;
  failed_this_round_ = true;
  result_.root_cause = what;
  result_.root_cause_tail = rank >= 0 ? std::move(tail) : std::vector<std::string>{};
  const int max_restarts = config_.rendezvous.max_restarts;
  bool restartable = (rank >= 0 || node_lost) && rendezvous_.assigned() &&
                     rendezvous_.round() < max_restarts && interrupts_ == 0;
  // A round without the lost node that could not be formed (the last spare
  // gone, fewer than MIN left) is neither announced nor counted: the job
  // ends here, saying why.
  if (restartable && node_lost && elastic()) {
    Membership trial = membership_;
    if (auto next = trial.next_round(ready_hosts(), labels()); !next) {
      what += "; cannot go on: " + next.error();
      history_.emplace_back(rendezvous_.round(), "cannot go on: " + next.error());
      result_.root_cause = what;
      restartable = false;
    }
  }
  note(restartable ? what + (node_lost ? "; a new round without it" : "; restarting all ranks") +
                         " (restart " + std::to_string(rendezvous_.round() + 1) + " of " +
                         std::to_string(max_restarts) + ")"
                   : "job " + config_.rendezvous.job +
                         (code == kExitHung ? " hung: " : " failed: ") + what);
  if (!result_.root_cause_tail.empty()) {
    std::string block =
        (tail_is_error_file_ ? "the exception of rank " + std::to_string(rank) +
                                   " (its TORCHELASTIC_ERROR_FILE, torch's @record):"
                             : "last lines of rank " + std::to_string(rank) + ":");
    for (const auto& l : result_.root_cause_tail) block += "\n  | " + l;
    note(block);
  }
  if (restartable) {
    phase_ = Phase::restarting;
    result_.restarts = rendezvous_.round() + 1;
    proto::Stop stop;
    stop.restart = true;
    stop.reason = what;
    stop_every_node(stop);
    if (rendezvous_.all_done()) {
      begin_next_round();
    } else {
      emit(job_action::ArmTimer{JobTimer::round_stop, round_stop_wait()});
    }
    return;
  }
  stop_job(code, what);
}

std::chrono::milliseconds JobPolicy::round_stop_wait() const {
  return std::chrono::seconds(stop_grace_s_.value_or(config_.grace_s) + 5);
}

void JobPolicy::begin_next_round() {
  emit(job_action::CancelTimer{JobTimer::round_stop});
  // The backoff keeps a crash loop from spinning. A round that replaces a
  // lost node is not one (each loss retires a host for good), and every
  // moment of it is training lost: it starts at once.
  const auto delay =
      member_lost_ ? std::chrono::milliseconds(0) : restart_delay(rendezvous_.round());
  emit(job_action::ArmTimer{JobTimer::restart_backoff, delay});
}

void JobPolicy::start_next_round() {
  if (phase_ != Phase::restarting) return;
  if (elastic()) {
    auto next = membership_.next_round(ready_hosts(), labels());
    if (!next) {
      const std::string what = "cannot go on: " + next.error();
      history_.emplace_back(rendezvous_.round(), what);
      fail(kExitFailure, what, -1, {});  // between rounds: the job ends
      return;
    }
    auto& round = *next;
    const int next_round = rendezvous_.round() + 1;
    for (auto& change : round.changes) {
      history_.emplace_back(next_round, change);
      note(std::move(change));
    }
    history_.emplace_back(next_round, "round " + std::to_string(next_round) + " runs on " +
                                          std::to_string(round.roster.size()) + " nodes");
    rendezvous_.set_roster(round.roster);
  }
  member_lost_ = false;
  stalled_ = false;
  emit(job_action::MarkRound{rendezvous_.round() + 1});
  failed_this_round_ = false;
  phase_ = Phase::running;
  emit(log_line(log::Level::info, "restart ", rendezvous_.round() + 1, " of ",
                config_.rendezvous.max_restarts, ": starting all ranks"));
  // A new node 0, or nodes new to the job: MASTER_ADDR and each node's NIC
  // are chosen again, by the same probe as at the start.
  if (elastic() && config_.probe_master && rendezvous_.roster() != probed_roster_) {
    reprobing_ = true;
    probe_.reset();
    start_probe();
    return;
  }
  send_round();
}

void JobPolicy::send_round() {
  const int master = master_host();
  const auto& conn = nodes_[static_cast<std::size_t>(master)].conn;
  if (config_.carry_checkpoint && checkpoint_host_ >= 0 && master != checkpoint_host_ && conn)
    emit(job_action::CarryCheckpoint{*conn, master});
  checkpoint_host_ = master;
  send_all(rendezvous_.begin_restart());
}

void JobPolicy::stop_job(int code, const std::string& reason) {
  if (phase_ == Phase::stopping) return;
  phase_ = Phase::stopping;
  exit_code_ = code;
  emit(job_action::CancelTimer{JobTimer::rendezvous});
  emit(job_action::CancelTimer{JobTimer::restart_backoff});
  proto::Stop stop;
  stop.exit_code = code;
  // What the other nodes print: a stop asked for (Ctrl-C, `dlaunch stop`)
  // is no failure.
  stop.reason = reason.empty()        ? ""
                : result_.interrupted ? "job " + config_.rendezvous.job + " was stopped: " + reason
                                      : "job " + config_.rendezvous.job + " failed: " + reason;
  if (stop_grace_s_) stop.grace_s = *stop_grace_s_;
  stop_every_node(stop);
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    // Agents that never joined learn it from their stdin.
    if (!nodes_[i].conn && nodes_[i].setup.agent_started_here)
      emit(job_action::CloseStdin{static_cast<int>(i)});
  }
  // Agents stop their ranks within the grace period; past that, end them.
  emit(job_action::ArmTimer{JobTimer::stop_deadline, round_stop_wait()});
  check_finished();
}

JobActions JobPolicy::on_connection_closed(ConnId conn, const std::string& reason) {
  const auto index = node_of(conn);
  if (finished_ || !index) return {};
  auto& node = nodes_[static_cast<std::size_t>(*index)];
  node.conn_closed = true;
  if (phase_ == Phase::stopping) {
    check_finished();
    return take();
  }
  lose_agent(*index, reason);
  return take();
}

void JobPolicy::lose_agent(int index, const std::string& reason) {
  auto& node = nodes_[static_cast<std::size_t>(index)];
  // The agent is dead to us (silent, frozen, or its link is cut): end it now
  // rather than after the grace period; over SSH this closes its channel, so a
  // live agent behind a broken rendezvous link still stops its ranks.
  if (node.setup.agent_started_here && !node.agent_gone) emit(job_action::KillAgent{index});
  const std::string what = "lost the agent of " + node.setup.label + ": " + reason;
  if (!lose_node(index, what)) {
    fail(kExitFailure,
         "lost the agent of node " + std::to_string(index) + " (" + node.setup.label +
             "): " + reason,
         -1, {});
  }
}

// A restart waits for every member's AgentDone; one that never sends it (its
// agent frozen, or broken) is lost at the deadline, as at the final stop,
// instead of keeping the job RESTARTING for ever.
void JobPolicy::on_round_stop_deadline() {
  if (phase_ != Phase::restarting || rendezvous_.all_done()) return;
  const std::string reason = "its ranks did not stop within the grace period (" +
                             std::to_string(stop_grace_s_.value_or(config_.grace_s)) +
                             " s) for the restart";
  for (std::size_t i = 0; i < nodes_.size() && phase_ == Phase::restarting; ++i) {
    const auto& node = nodes_[i];
    if (!node.conn || node.conn_closed) continue;
    const auto* member = rendezvous_.member(*node.conn);
    if (member == nullptr || member->done) continue;
    emit(job_action::CloseConnection{*node.conn, reason});
    lose_agent(static_cast<int>(i), reason);
  }
}

JobActions JobPolicy::on_agent_exited(int index, int exit_code, const std::string& error,
                                      const std::string& stderr_tail) {
  if (finished_) return {};
  auto& node = nodes_[static_cast<std::size_t>(index)];
  node.agent_gone = true;
  settle(node);
  emit(job_action::CloseStdin{index});
  if (phase_ == Phase::stopping) {
    check_finished();
    return take();
  }
  std::string what;
  if (!error.empty()) {
    what = error;
  } else {
    what = "the agent on " + node.setup.label + " exited with code " + std::to_string(exit_code);
    if (!stderr_tail.empty()) what += ": " + stderr_tail;
  }
  // A lost agent fails the job (unless it is elastic); its connection may
  // not have noticed yet. One that refused its settings (a --workdir or
  // --master-port it cannot use) exits 2, and so does the job: a usage
  // error, not a crash.
  if (!lose_node(index, what))
    fail(exit_code == kExitUsage ? kExitUsage : kExitFailure, what, -1, {});
  check_finished();
  return take();
}

bool JobPolicy::lose_node(int index, const std::string& what) {
  if (!elastic()) return false;
  auto& node = nodes_[static_cast<std::size_t>(index)];
  // Its agent's exit and its connection's close both come here: once is enough.
  if (membership_.retired(index)) return true;
  const bool member = rendezvous_.node_rank_of(index) >= 0 && roster_chosen_;
  membership_.retire(index, what);
  if (member) member_lost_ = true;
  if (node.conn) rendezvous_.on_leave(*node.conn);
  // Its sync is not waited for any more (lose_node runs once per host).
  if (node.sync_started && !node.synced) --sync_pending_;
  if (!member) {
    // A spare, or a host not (yet) in the job: the job goes on without it.
    membership_note(node.setup.label + " is out of the job: " + what);
    maybe_choose_roster();
    fail_if_none_is_coming();
    return true;
  }
  switch (phase_) {
    case Phase::starting:
      // In the first roster, before its ranks were assigned (probe or sync):
      // the caller fails the job, as without spares.
      return false;
    case Phase::running:
      if (rendezvous_.assigned()) {
        history_.emplace_back(rendezvous_.round(), what);
        fail(kExitFailure, what, -1, {}, /*node_lost=*/true);
        return true;
      }
      return false;
    case Phase::restarting:
      // Between rounds: the next roster leaves it out.
      membership_note(node.setup.label + " is out of the job: " + what);
      if (rendezvous_.all_done()) begin_next_round();
      return true;
    case Phase::stopping:
      return true;
  }
  return false;
}

void JobPolicy::check_finished() {
  if (phase_ != Phase::stopping || finished_) return;
  // Nodes only go away while stopping: resume the scan where the last one
  // stopped, so that thousands of agents exiting cost O(nodes) in all.
  for (; finished_scan_ < nodes_.size(); ++finished_scan_) {
    const auto& n = nodes_[finished_scan_];
    if (n.setup.agent_started_here && !n.agent_gone) return;
    if (!n.setup.agent_started_here && n.conn && !n.conn_closed) return;
  }
  finish();
}

void JobPolicy::finish() {
  finished_ = true;
  emit(job_action::Finish{exit_code_});
}

JobActions JobPolicy::on_signal(int signal, std::optional<int> grace_s) {
  if (finished_) return {};
  ++interrupts_;
  if (grace_s && interrupts_ == 1) stop_grace_s_ = *grace_s;
  const std::string name = signal_name(signal);
  if (interrupts_ == 1) {
    note("received " + name + ": stopping all ranks (again to kill them now)");
    failed_this_round_ = true;
    result_.root_cause = "interrupted by " + name;
    result_.interrupted = true;
    if (phase_ == Phase::stopping) {
      exit_code_ = 128 + signal;
    } else {
      stop_job(128 + signal, "interrupted by " + name);
    }
  } else {
    note("received " + name + " again: killing all ranks now");
    proto::Stop stop;
    stop.exit_code = exit_code_;
    stop.grace_s = 0;
    stop_every_node(stop);
    killing_now_ = true;
    emit(job_action::ArmTimer{JobTimer::stop_deadline, std::chrono::seconds(3)});
  }
  return take();
}

JobActions JobPolicy::on_timer(JobTimer timer) {
  if (finished_) return {};
  switch (timer) {
    case JobTimer::rendezvous:
      emit(job_action::CancelTimer{JobTimer::waiting_report});
      on_rendezvous_timeout();
      break;
    case JobTimer::restart_backoff:
      start_next_round();
      break;
    case JobTimer::stop_deadline:
      on_stop_deadline();
      break;
    case JobTimer::round_stop:
      on_round_stop_deadline();
      break;
    case JobTimer::waiting_report:
      report_waiting();
      break;
    case JobTimer::join:
      join_timed_out_ = true;
      maybe_choose_roster();
      break;
  }
  return take();
}

void JobPolicy::on_stop_deadline() {
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    const auto& n = nodes_[i];
    if (!n.setup.agent_started_here || n.agent_gone) continue;
    if (!killing_now_)
      emit(log_line(log::Level::warn, "agent on ", n.setup.label,
                    " did not exit in time; killing it"));
    emit(job_action::KillAgent{static_cast<int>(i)});
  }
  finish();
}

}  // namespace dlaunch
