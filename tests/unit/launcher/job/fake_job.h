// A whole job driven through JobPolicy the way the coordinator drives it, with
// agents on a FakeTransport and timers on a fake clock: a test plays the
// agents, the ranks and the user (signals), and reads back what the user would
// see (the printed lines, the exit code) and what each agent was told.
#pragma once

#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/console.h"
#include "common/text.h"
#include "launcher/fleet/agent_stderr.h"
#include "launcher/job/job_policy.h"
#include "launcher/transport/fake_transport.h"

namespace dlaunch::testing {

class FakeJob {
 public:
  struct Setup {
    int nodes = 3;
    int nproc = 2;  // ranks per node
    int max_restarts = 0;
    int grace_s = 10;
    int rdzv_timeout_s = 600;
    bool verbose = false;
    std::set<int> ranks_filter = {};
    // Probe MASTER_ADDR as a job over several machines does. Node 0 is listed
    // by 198.19.0.2 (a management address) and also has 198.18.1.10 on ens5;
    // node N's interface is ethN.
    bool probe = false;
    bool sync = false;               // --sync: the assignment waits for every node's SyncDone
    std::set<int> behind_jump = {};  // nodes reached through a jump host, without via = "ssh"
    // Elastic: hosts marked spare, --nnodes MIN:MAX (0: every host not spare).
    std::set<int> spares = {};
    std::size_t min_nodes = 0;
    std::size_t max_nodes = 0;
    bool carry_checkpoint = false;  // --checkpoint-dir
  };
  using ms = std::chrono::milliseconds;

  explicit FakeJob(Setup setup)
      : setup_(setup),
        policy_(config(setup)),
        out_(::open_memstream(&out_buf_, &out_size_)),
        err_(::open_memstream(&err_buf_, &err_size_)),
        console_(out_, err_) {}
  ~FakeJob() {
    handles_.clear();
    std::fclose(out_);
    std::fclose(err_);
    std::free(out_buf_);
    std::free(err_buf_);
  }
  FakeJob(const FakeJob&) = delete;
  FakeJob& operator=(const FakeJob&) = delete;

  static ConnId conn(int node) { return 1000 + static_cast<ConnId>(node); }
  static std::string host(int node) { return "host" + std::to_string(node); }
  int node_of_rank(int rank) const { return rank / setup_.nproc; }
  int world_size() const { return setup_.nodes * setup_.nproc; }

  // --- what happens -------------------------------------------------------

  // The coordinator starts every node's agent, then the policy.
  void start() {
    for (int node = 0; node < setup_.nodes; ++node) {
      AgentEvents events;
      events.on_stderr = [this, node](std::string_view bytes) {
        if (auto unreachable = stderr_[node].add(bytes, host(node)))
          apply(policy_.on_agent_unreachable(node, std::move(*unreachable)));
      };
      events.on_exit = [this, node](int code, const std::string& error) {
        apply(policy_.on_agent_exited(node, code, error, stderr_[node].last(5)));
      };
      HostEntry entry;
      entry.name = host(node);
      handles_.push_back(transport.start(entry, AgentLaunch{}, std::move(events)));
    }
    apply(policy_.start());
  }
  // `machine_id` and `gpus` as the agent reports them (default: unknown, none).
  void join(int node, const std::string& machine_id = "", int gpus = 0) {
    proto::Join join;
    join.node_rank = node;
    join.machine_id = machine_id;
    join.gpus = gpus;
    join.nproc = setup_.nproc;
    join.host = host(node);
    join.master_port = 29500 + node;
    join.probe_port = 29500 + node;
    join.pid = 7000 + node;
    if (node == 0) {
      join.interfaces = {
          {"mgmt0", net::InterfaceKind::veth, 1500, true, {{"198.19.0.2", 30, false}}},
          {"ens5", net::InterfaceKind::physical, 1500, true, {{"198.18.1.10", 24, false}}}};
    } else {
      join.interfaces = {{"eth" + std::to_string(node),
                          net::InterfaceKind::veth,
                          1500,
                          true,
                          {{"198.18.2." + std::to_string(node), 24, false}}}};
    }
    apply(policy_.on_join(conn(node), join));
  }
  // A node's answer to the Probe it received: `reached` per candidate.
  void probe_report(int node, const std::vector<bool>& reached) {
    proto::ProbeReport report;
    for (bool r : reached) {
      report.outcomes.push_back({r, r ? 400 : 0,
                                 r ? (node == 0 ? "ens5" : "eth" + std::to_string(node)) : "",
                                 r ? "" : "timed out"});
    }
    apply(policy_.on_probe_report(conn(node), report));
  }
  // The node's --sync ended (`error` empty: it succeeded).
  void sync_done(int node, const std::string& error = "") {
    proto::SyncDone done;
    done.files_written = 3;
    done.bytes_received = 100;
    done.error = error;
    apply(policy_.on_sync_done(conn(node), done));
  }
  void join_all() {
    for (int node = 0; node < setup_.nodes; ++node) join(node);
  }
  // A rank prints a line (kept for the failure summary, as the log sink does).
  void rank_prints(int rank, const std::string& line) { tails_[rank].push_back(line); }
  void rank_exits(int rank, int code, int signal = 0) {
    rank_exits_on(node_of_rank(rank), rank, code, signal);
  }
  // As reported by `node`'s agent, which need not hold the rank.
  void rank_exits_on(int node, int rank, int code, int signal = 0) {
    proto::RankExit exit;
    exit.rank = rank;
    exit.exit_code = code;
    exit.signal = signal;
    apply(policy_.on_rank_exit(conn(node), exit, tails_[rank]));
  }
  void all_ranks_exit(int code) {
    for (int rank = 0; rank < world_size(); ++rank) rank_exits(rank, code);
  }
  // The node's ranks have all exited this round.
  void agent_done(int node) {
    proto::AgentDone done;
    done.round = policy_.rendezvous().round();
    done.next_master_port = 31000 + node;
    apply(policy_.on_agent_done(conn(node), done));
  }
  void all_agents_done() {
    for (int node = 0; node < setup_.nodes; ++node) agent_done(node);
  }
  void connection_lost(int node, const std::string& reason) {
    closed_[node] = true;
    apply(policy_.on_connection_closed(conn(node), reason));
  }
  void agent_writes_stderr(int node, const std::string& bytes) {
    transport.write_stderr(static_cast<std::size_t>(node), bytes);
  }
  void agent_exits(int node, int code, const std::string& error = "") {
    transport.exit(static_cast<std::size_t>(node), code, error);
  }
  // An agent that was told to stop does: its connection closes, its process exits.
  void agent_stops(int node) {
    if (!closed_[node] && policy_.node_of(conn(node))) connection_lost(node, "connection closed");
    agent_exits(node, 0);
  }
  void all_agents_stop() {
    for (int node = 0; node < setup_.nodes; ++node) agent_stops(node);
  }
  void signal(int signal, std::optional<int> grace_s = std::nullopt) {
    apply(policy_.on_signal(signal, grace_s));
  }

  // Moves the clock to the earliest armed timer and fires it.
  std::optional<JobTimer> fire_next_timer() {
    if (armed_.empty()) return std::nullopt;
    auto next = armed_.begin();
    for (auto it = armed_.begin(); it != armed_.end(); ++it) {
      if (it->second < next->second) next = it;
    }
    const JobTimer timer = next->first;
    now_ = next->second;
    armed_.erase(next);
    apply(policy_.on_timer(timer));
    return timer;
  }

  // --- what came out ------------------------------------------------------

  FakeTransport transport;
  std::optional<int> exit_code;          // set when the policy finished the job
  std::vector<std::string> logs;         // "warn: ..." as the launcher's log shows them
  std::vector<int> marked_rounds;        // restart rounds the rank files were marked with
  std::vector<ConnId> closed_by_server;  // connections the coordinator closed
  std::vector<int> sync_started;         // nodes whose --sync the coordinator was told to start
  // --checkpoint-dir: each carry's node, and how many messages it had been
  // sent by then (what comes after waits behind the checkpoint).
  std::vector<std::pair<int, std::size_t>> checkpoint_carried;

  const JobPolicy& policy() const { return policy_; }
  ms now() const { return now_; }
  // How long until `timer` fires, if it is armed.
  std::optional<ms> armed(JobTimer timer) const {
    auto it = armed_.find(timer);
    if (it == armed_.end()) return std::nullopt;
    return it->second - now_;
  }
  // Everything printed on stderr since the last call, byte for byte.
  std::string printed() {
    std::fflush(err_);
    std::string text(err_buf_ + printed_until_, err_size_ - printed_until_);
    printed_until_ = err_size_;
    return text;
  }
  const std::vector<proto::Message>& received(int node) { return inbox_[conn(node)]; }
  // Messages of one kind that a node received, oldest first.
  template <class M>
  std::vector<M> received_of(int node) {
    std::vector<M> found;
    for (const auto& m : received(node)) {
      if (const auto* one = std::get_if<M>(&m)) found.push_back(*one);
    }
    return found;
  }
  void forget_received() { inbox_.clear(); }
  bool has_log(const std::string& line) const {
    for (const auto& l : logs) {
      if (l == line) return true;
    }
    return false;
  }

 private:
  static JobPolicy::Config config(const Setup& setup) {
    JobPolicy::Config c;
    c.rendezvous.nnodes = setup.nodes;
    c.rendezvous.job = "job";
    c.rendezvous.max_restarts = setup.max_restarts;
    c.rendezvous.master_addr = "10.0.0.1";
    for (int node = 0; node < setup.nodes; ++node) {
      c.rendezvous.node_names.push_back(host(node));
      c.nodes.push_back({host(node), true, setup.behind_jump.contains(node),
                         setup.spares.contains(node), "198.19.0." + std::to_string(2 + node)});
    }
    c.rdzv_timeout_s = setup.rdzv_timeout_s;
    c.grace_s = setup.grace_s;
    c.verbose = setup.verbose;
    c.ranks_filter = setup.ranks_filter;
    c.probe_master = setup.probe;
    c.sync = setup.sync;
    c.min_nodes = setup.min_nodes;
    c.max_nodes = setup.max_nodes;
    c.carry_checkpoint = setup.carry_checkpoint;
    c.rendezvous.admit_late = !setup.spares.empty() || setup.max_nodes != 0;
    c.rendezvous.hold_for_network =
        setup.probe || setup.sync || !setup.spares.empty() || setup.max_nodes != 0;
    c.master_sources.node0_address = "198.19.0.2";
    return c;
  }

  // The coordinator's side of each action, on fakes.
  void apply(const JobActions& actions) {
    for (const auto& action : actions) {
      REQUIRE_FALSE(exit_code.has_value());  // nothing comes after Finish
      std::visit([this](const auto& a) { perform(a); }, action);
    }
  }
  void perform(const job_action::Send& a) { inbox_[a.to].push_back(a.message); }
  void perform(const job_action::CloseConnection& a) { closed_by_server.push_back(a.conn); }
  void perform(const job_action::CloseStdin& a) { handles_.at(a.node)->close_stdin(); }
  void perform(const job_action::KillAgent& a) { handles_.at(a.node)->kill(); }
  void perform(const job_action::ArmTimer& a) { armed_[a.timer] = now_ + a.after; }
  void perform(const job_action::CancelTimer& a) { armed_.erase(a.timer); }
  void perform(const job_action::Note& a) { console_.note(a.text); }
  void perform(const job_action::Log& a) {
    static const char* const kLevels[] = {"debug", "info", "warn", "error"};
    logs.push_back(std::string(kLevels[static_cast<int>(a.level)]) + ": " + a.text);
  }
  void perform(const job_action::MarkRound& a) { marked_rounds.push_back(a.round); }
  void perform(const job_action::StartSync& a) {
    CHECK(a.conn == conn(a.node));
    sync_started.push_back(a.node);
  }
  void perform(const job_action::CarryCheckpoint& a) {
    CHECK(a.conn == conn(a.node));
    checkpoint_carried.emplace_back(a.node, inbox_[a.conn].size());
  }
  void perform(const job_action::Finish& a) {
    exit_code = a.exit_code;
    armed_.clear();
  }

  Setup setup_;
  JobPolicy policy_;
  std::vector<std::unique_ptr<AgentHandle>> handles_;  // by node
  std::map<int, AgentStderr> stderr_;                  // each agent's own diagnostics
  std::map<int, std::vector<std::string>> tails_;      // each rank's last lines
  std::map<int, bool> closed_;                         // connection closed, by node
  std::map<ConnId, std::vector<proto::Message>> inbox_;
  std::map<JobTimer, ms> armed_;  // deadlines on the fake clock
  ms now_{0};
  char* out_buf_ = nullptr;
  std::size_t out_size_ = 0;
  char* err_buf_ = nullptr;
  std::size_t err_size_ = 0;
  std::size_t printed_until_ = 0;
  std::FILE* out_;
  std::FILE* err_;
  Console console_;
};

}  // namespace dlaunch::testing
