// The job's fate, with no I/O: which failure wins, whether it restarts the
// ranks or ends the job, the restart backoff, what Ctrl-C (once and twice)
// does, when the job is finished and with which exit code. Events go in (an
// agent joined, a rank or an agent exited, a connection was lost, a signal, a
// timer); actions come out (messages to agents, stdin to close, agents to kill,
// timers to arm, lines to print, the end). The coordinator wires sockets,
// transports, timers and the console to it, the way rendezvous/server.h wires
// them to RendezvousState, which this policy drives: so a unit test runs a
// whole job of 1,000 nodes in one process with a fake clock.
//
// Rules kept here:
// - The first failure in time wins: it decides the exit code (a rank's own
//   code, 128+N for signal N, 1 for a lost agent) and the root cause.
// - A rank's failure restarts every rank while restart rounds remain and no
//   interrupt came. A lost agent or node ends the job, even between rounds (it
//   could not take part in the next one), unless the job is elastic (spares,
//   or --nnodes MIN:MAX): then the node is retired and the next round runs on
//   the roster launcher/fleet/membership.h picks, with MASTER_ADDR probed
//   again for it.
// - Rounds back off like torchrun: min(500 ms * 2^min(round, 6), 30 s),
//   except a round that replaces a lost node, which starts at once.
// - With --sync the assignment waits for every node's SyncDone (and for the
//   MASTER_ADDR probe when there is one); a node's sync starts as it joins. A
//   failed sync fails the job before any rank starts, naming the host.
// - Stopping gives agents the grace period plus 5 s before they are killed; a
//   second SIGINT/SIGTERM asks for grace 0 and kills the agents after 3 s.
//
// Defined in three files: job_policy.cpp (events, rounds, the end),
// job_policy_master.cpp (the MASTER_ADDR probe and choice) and
// job_policy_waiting.cpp (what a job not yet started waits for).
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "common/log.h"
#include "launcher/fleet/agent_link.h"
#include "launcher/fleet/fleet_node.h"
#include "launcher/fleet/master_probe.h"
#include "launcher/fleet/membership.h"
#include "launcher/record/job_record.h"
#include "net/candidates.h"
#include "net/choice.h"
#include "protocol/messages.h"
#include "rendezvous/state.h"

namespace dlaunch {

// waiting_report: while nodes are missing at the rendezvous, say which, every
// kWaitingReport, instead of silence for the whole --rdzv-timeout.
// join: an elastic job starts with the nodes that joined by --join-timeout.
// round_stop: a restart waits for every member's AgentDone until then.
enum class JobTimer {
  rendezvous,
  restart_backoff,
  stop_deadline,
  waiting_report,
  join,
  round_stop
};
inline constexpr std::size_t kJobTimers = 6;
inline constexpr std::chrono::seconds kWaitingReport{10};

namespace job_action {

using agent_link::CloseConnection;
using agent_link::CloseStdin;
using agent_link::KillAgent;
using agent_link::Log;
using agent_link::Send;
using ArmTimer = agent_link::ArmTimer<JobTimer>;
using CancelTimer = agent_link::CancelTimer<JobTimer>;
using agent_link::Finish;
// A "dlaunch: <text>" line for the user.
struct Note {
  std::string text;
};
// A new restart round begins: rank files get a marker.
struct MarkRound {
  int round = 0;
};
// --sync: send the directory to the node's agent on `conn` (the coordinator
// streams it and reports the agent's SyncDone to on_sync_done).
struct StartSync {
  ConnId conn = 0;
  int node = 0;
};
// --checkpoint-dir: a round starts on a new node 0. Before anything else on
// `conn` (its Assign first), the coordinator sends that node the checkpoint it
// keeps, the latest complete one from the node 0 before.
struct CarryCheckpoint {
  ConnId conn = 0;
  int node = 0;  // the new node 0's host index
};
}  // namespace job_action

using JobAction =
    std::variant<job_action::Send, job_action::CloseConnection, job_action::CloseStdin,
                 job_action::KillAgent, job_action::ArmTimer, job_action::CancelTimer,
                 job_action::Note, job_action::Log, job_action::MarkRound, job_action::StartSync,
                 job_action::CarryCheckpoint, job_action::Finish>;
using JobActions = std::vector<JobAction>;

class JobPolicy {
 public:
  struct NodeSetup {
    std::string label;  // the name used in prefixes and messages
    // This coordinator started the node's agent (and so can close its stdin or
    // kill it); false for manual-mode nodes that start their own.
    bool agent_started_here = false;
    // Reached through a jump host, with agents connecting to the rendezvous
    // themselves: the likeliest reason it never joins is a network that only
    // lets SSH in (via = "ssh" is the way through).
    bool behind_jump = false;
    // Runs ranks only in place of a lost node (`spare = true`, --spares).
    bool spare = false;
    // Its hosts-file address: a MASTER_ADDR candidate when it becomes node 0.
    std::string address;
  };
  struct Config {
    RendezvousState::Config rendezvous;  // its max_restarts is the job's
    std::vector<NodeSetup> nodes;        // indexed by node rank, rendezvous.nnodes of them
    bool label_from_join = false;        // manual mode: name a node after its agent's host
    int rdzv_timeout_s = 600;
    int grace_s = 10;
    bool verbose = false;        // a note for every rank exit
    std::set<int> ranks_filter;  // --ranks-filter, checked against the world once known
    // Probe node 0's addresses from every node before assigning (jobs over
    // several machines); rendezvous.hold_for_network must be set with it.
    bool probe_master = false;
    net::CandidateSources master_sources;  // node0_interfaces come from node 0's Join
    int probe_timeout_ms = 3000;
    // --sync, --image-file: hold the assignment until every node's sync is
    // done; rendezvous.hold_for_network must be set with it. `sync_what`
    // names them in notes.
    bool sync = false;
    std::string sync_what = "--sync";
    // Elastic membership: with spares or min_nodes < max_nodes, the job
    // starts once every host joined or, after join_timeout_s, with at least
    // min_nodes, and a lost node is replaced (membership.h). 0: every host
    // not marked spare. rendezvous.hold_for_network must be set with it.
    std::size_t min_nodes = 0;
    std::size_t max_nodes = 0;
    int node_fail_limit = 2;
    int join_timeout_s = 30;
    // --checkpoint-dir: a round on a new node 0 carries the checkpoint to it.
    bool carry_checkpoint = false;
  };

  explicit JobPolicy(Config config);

  // The job begins (agents are being started): arms the rendezvous timeout.
  JobActions start();
  // An authenticated agent's Join; assignments go out once every node joined.
  JobActions on_join(ConnId conn, const proto::Join& join);
  // An agent's probe of node 0's candidate addresses.
  JobActions on_probe_report(ConnId conn, const proto::ProbeReport& report);
  // A node's --sync ended: its agent's SyncDone, or one the coordinator made
  // up with the error when the transfer could not go on.
  // `what`: the transfer that failed (--sync, --image-file), for the message.
  JobActions on_sync_done(ConnId conn, const proto::SyncDone& done,
                          const std::string& what = "--sync");
  // A rank exited. `last_lines` is what it printed last, for the root cause.
  JobActions on_rank_exit(ConnId conn, const proto::RankExit& exit,
                          std::vector<std::string> last_lines);
  // An agent sent `what` (output, an exit) for a rank it does not run: ignored,
  // said for the first few, and past kForeignRankLimit its connection is
  // closed (a broken or hostile agent must not fill node 0's log or disk).
  JobActions on_foreign_rank(ConnId conn, std::string_view what, int rank);
  // No rank made progress for the stall time: STALLED in the record (and
  // `list`, `get`, `top job`) until progress returns it to RUNNING.
  void set_stalled(bool stalled) { stalled_ = stalled; }
  // --hang-timeout: the job hung; `what` says since when and whom the verdict
  // suspects (`suspect`: a rank, or -1). Ends it HUNG with exit code 124, or
  // restarts the round where --max-restarts allows.
  JobActions on_hung(const std::string& what, int suspect);
  // A node's rendezvous connection, while it has one.
  std::optional<ConnId> conn_of(int node) const;
  static constexpr std::size_t kForeignRanksSaid = 5;
  static constexpr std::size_t kForeignRankLimit = 1000;
  // An agent's ranks have all exited for the round.
  JobActions on_agent_done(ConnId conn, const proto::AgentDone& done);
  // A joined agent's rendezvous connection closed (or timed out).
  JobActions on_connection_closed(ConnId conn, const std::string& reason);
  // The agent process of a node started here is gone (or never started):
  // `error` says why when it is not an ordinary exit; `stderr_tail` is the end
  // of the agent's own diagnostics.
  JobActions on_agent_exited(int node, int exit_code, const std::string& error,
                             const std::string& stderr_tail);
  // The agent of a node that has not joined reports that it cannot connect to
  // the rendezvous (`what`: "cannot connect to ADDR:PORT: <error>"); it keeps
  // trying. Once every node still missing has said so, nothing is on its way:
  // the job fails at once, naming each with its error, instead of waiting out
  // --rdzv-timeout.
  JobActions on_agent_unreachable(int node, std::string what);
  // SIGINT or SIGTERM. `grace_s` (from `dlaunch stop --grace S`) replaces the
  // job's grace period for this stop.
  JobActions on_signal(int signal, std::optional<int> grace_s = std::nullopt);
  JobActions on_timer(JobTimer timer);

  const RendezvousState& rendezvous() const { return rendezvous_; }
  bool elastic() const { return membership_.elastic(); }
  // Membership changes of an elastic job, oldest first: the round each
  // happened in and what the terminal said.
  const std::vector<std::pair<int, std::string>>& history() const { return history_; }
  const std::string& node_label(int node) const;
  std::optional<int> node_of(ConnId conn) const;
  bool finished() const { return finished_; }
  // Exit code, root cause and its tail, restarts and world size so far.
  JobResult result() const;
  // What the job record says: PENDING until the ranks are assigned, RUNNING,
  // RESTARTING between rounds, then the final status once finished.
  JobStatus status() const;
  int round() const { return rendezvous_.round(); }
  // Each node's host, ranks, agent pid and state, by node rank.
  std::vector<NodeRecord> node_records() const;

 private:
  struct Node : FleetNode {
    NodeSetup setup;
    std::int64_t agent_pid = 0;  // from its Join
    int gpus = 0;                // its host's GPUs, from its Join
    bool sync_started = false;
    bool synced = false;
    // The agent's own report that it cannot reach the rendezvous; cleared
    // when it joins after all.
    std::optional<std::string> unreachable;
    // No longer on its way: joined, gone, or said it cannot connect.
    bool settled = false;
    std::size_t foreign_ranks = 0;  // messages for ranks it does not run
  };
  enum class Phase { starting, running, restarting, stopping };

  void send_all(const std::vector<Outbound>& out);
  // Elastic: the first roster, once every host joined, or at the join timeout.
  void maybe_choose_roster();
  // Elastic: a node's agent or connection is gone. False when the job is not
  // elastic (the caller fails the job).
  bool lose_node(int index, const std::string& what);
  // A node's agent is gone or silent: ended, and lost (elastic) or the job fails.
  void lose_agent(int index, const std::string& reason);
  void on_round_stop_deadline();
  // How long agents have to stop their ranks: the grace period and a margin.
  std::chrono::milliseconds round_stop_wait() const;
  std::vector<bool> ready_hosts() const;
  std::vector<std::string> labels() const;
  int master_host() const { return rendezvous_.roster().front(); }
  void settle(Node& node) {
    if (!node.settled) ++settled_;
    node.settled = true;
  }
  // MASTER_ADDR is chosen: the held first assignment goes out, or, between
  // rounds, the next round's with the new choice.
  void network_chosen();
  void start_probe();
  void send_probes(const std::vector<MasterProbe::Send>& sends);
  void apply_probe_reply(MasterProbe::Reply reply);
  void choose_master();
  void maybe_assign();
  void on_assigned();
  void warn_about_ranks_filter();
  void report_waiting();
  std::string names_of(const std::function<bool(std::size_t)>& missing, std::size_t at_most) const;
  std::string missing_nodes(std::size_t at_most) const;
  std::string missing_probe_reports(std::size_t at_most) const;
  std::string missing_syncs(std::size_t at_most) const;
  bool waiting_for_sync() const;
  void stop_every_node(const proto::Stop& stop);
  // `node_lost`: an elastic job's node is gone; a round may replace it.
  void fail(int code, const std::string& what, int rank, std::vector<std::string> tail,
            bool node_lost = false);
  void stop_job(int code, const std::string& reason);
  void begin_next_round();
  void start_next_round();
  // The next round's assignments, after the checkpoint when node 0 changed.
  void send_round();
  void check_finished();
  void finish();
  void on_rendezvous_timeout();
  // Fails the job once every node still missing has said it cannot connect.
  void fail_if_none_is_coming();
  // " (... via = \"ssh\" ...)": the hint for missing nodes behind a jump host,
  // empty when none is.
  std::string jump_host_hint() const;
  void on_stop_deadline();
  std::string rank_label(int rank) const;
  template <class Action>
  void emit(Action action) {
    out_.emplace_back(std::in_place_type<Action>, std::move(action));
  }
  void note(std::string text) { emit(job_action::Note{std::move(text)}); }
  // A membership change: said on the terminal and kept for the job record.
  void membership_note(std::string text) {
    history_.emplace_back(rendezvous_.round(), text);
    note(std::move(text));
  }
  JobActions take();
  // False when the join ends the job: the machine is listed twice and has GPUs.
  bool check_machine_listed_once(int node_rank, const proto::Join& join);

  Config config_;
  RendezvousState rendezvous_;
  Membership membership_;
  bool roster_chosen_ = false;  // elastic: the first round's roster is set
  bool join_timed_out_ = false;
  // Elastic: MASTER_ADDR is probed again for a new roster before it starts.
  bool reprobing_ = false;
  // Elastic: a node of the current roster was lost this round, so the next
  // round starts without the restart backoff.
  bool member_lost_ = false;
  // --checkpoint-dir: the host whose checkpoint the coordinator keeps (the
  // last round's node 0); -1 before the first round.
  int checkpoint_host_ = -1;
  std::vector<int> probed_roster_;  // the roster the last MASTER_ADDR choice was made for
  std::vector<std::pair<int, std::string>> history_;
  // Counted, not scanned, so that thousands of joins and syncs cost O(nodes):
  std::size_t settled_ = 0;       // nodes with `settled` set
  std::size_t sync_pending_ = 0;  // syncs started on nodes not lost, not yet done
  std::vector<Node> nodes_;       // indexed by node rank
  std::unordered_map<ConnId, int> node_of_conn_;
  Phase phase_ = Phase::starting;
  bool failed_this_round_ = false;
  int exit_code_ = 0;
  int interrupts_ = 0;
  std::optional<int> stop_grace_s_;  // `dlaunch stop --grace`
  bool killing_now_ = false;         // the stop deadline is the second interrupt's 3 s
  bool finished_ = false;
  bool stalled_ = false;
  bool tail_is_error_file_ = false;  // the root cause's tail is a rank's @record exception
  std::size_t finished_scan_ = 0;
  std::chrono::seconds elapsed_waiting_{0};  // nodes before it are known gone (see check_finished)
  JobResult result_;
  JobActions out_;
  std::vector<net::Candidate> candidates_;  // node 0's; empty until it has joined
  bool probe_sent_ = false;
  std::optional<MasterProbe> probe_;
  // The probe's outcome, kept until the syncs are done too.
  std::optional<std::pair<std::string, std::vector<std::string>>> network_;
  std::size_t synced_ = 0;
  std::optional<proto::Stop> last_stop_;  // what every node was told, for those joining later
  std::size_t unreachable_ = 0;           // nodes not joined whose agent said it cannot connect
  // Each machine id's first node: a second one is the same machine listed twice.
  std::unordered_map<std::string, int> node_of_machine_;
  bool warned_same_machine_ = false;
};

}  // namespace dlaunch
