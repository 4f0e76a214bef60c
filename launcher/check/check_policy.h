// `dlaunch check`'s course, with no I/O, the way JobPolicy runs a job: events
// in (an agent joined, a message, an agent exited, a timer, a signal),
// actions out (messages, stdin to close, agents to kill, timers, the end).
//
//   joining: every agent joins (the rendezvous state checks it is who the plan
//            says) and answers FactsRequest; a host whose agent cannot start,
//            or that does not join within the timeout, is down with the reason.
//   probing: node 0's candidate MASTER_ADDRs, probed by every host that is up
//            and chosen exactly as a job does (fleet/master_probe.h: the same
//            window of connections, the same rounds on a big fleet).
//   testing: rounds of disjoint pairs (pair_schedule.h): both hosts of a pair
//            connect to each other's probe port on the address of the other's
//            chosen interface and write for the round's duration.
//   stopping: Stop to every agent, stdin closed; agents that have not exited
//            after the grace are killed. Nothing is left on the hosts.
//
// With Config::facts_only (`dlaunch top node`), joining goes straight to
// stopping: no MASTER_ADDR probe and no pairs, only each host's facts.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "common/log.h"
#include "launcher/check/check_result.h"
#include "launcher/check/pair_schedule.h"
#include "launcher/fleet/agent_link.h"
#include "launcher/fleet/fleet_node.h"
#include "launcher/fleet/master_probe.h"
#include "net/candidates.h"
#include "net/choice.h"
#include "protocol/messages.h"
#include "rendezvous/state.h"

namespace dlaunch {

enum class CheckTimer { join, probe, round, nccl, stop };

namespace check_action {
using agent_link::CloseConnection;
using agent_link::CloseStdin;
using agent_link::KillAgent;
using agent_link::Log;
using agent_link::Send;
using ArmTimer = agent_link::ArmTimer<CheckTimer>;
using agent_link::Finish;
}  // namespace check_action

using CheckAction = std::variant<check_action::Send, check_action::CloseConnection,
                                 check_action::CloseStdin, check_action::KillAgent,
                                 check_action::ArmTimer, check_action::Log, check_action::Finish>;
using CheckActions = std::vector<CheckAction>;

// The address a host's peers test it at: node 0's MASTER_ADDR (or, with none
// chosen, the candidate most hosts reached); another host's address on the
// interface its connection to node 0 left by (or would, by its routes), of the
// same family; else its best own address. Pure.
struct TestAddress {
  std::string address;
  std::string interface;
};
std::vector<TestAddress> test_addresses(const std::vector<net::Candidate>& candidates,
                                        std::optional<std::size_t> candidate,
                                        const std::vector<const net::Interfaces*>& interfaces,
                                        const std::vector<const net::NodeProbe*>& probes);

class CheckPolicy {
 public:
  struct Host {
    std::string name;
    std::string address;
  };
  struct Config {
    std::vector<Host> hosts;  // node rank order
    net::CandidateSources master_sources;
    std::chrono::milliseconds join_timeout{60'000};
    int probe_timeout_ms = 3000;
    int connect_timeout_ms = 3000;
    // The whole matrix within about this, each round within the bounds.
    std::chrono::milliseconds matrix_budget{6000};
    std::chrono::milliseconds shortest_round{250};
    std::chrono::milliseconds longest_round{1000};
    std::chrono::milliseconds stop_grace{5000};
    // Every pair, or a sample of them (pair_schedule.h).
    MatrixPairs matrix_pairs = MatrixPairs::automatic;
    // Each host's facts only, then stop (no probe, no matrix, no pairs).
    bool facts_only = false;
    // --nccl: after the matrix, an all-reduce across every GPU of the hosts.
    bool nccl = false;
    std::vector<std::int64_t> nccl_sizes = {};
    std::int32_t nccl_iterations = 20;
    std::int32_t nccl_warmup = 5;
    std::chrono::milliseconds nccl_timeout{180'000};
  };

  explicit CheckPolicy(Config config);

  CheckActions start();
  // `now_us`: this machine's time of day, for the clock skew.
  CheckActions on_join(ConnId conn, const proto::Join& join, std::int64_t now_us);
  CheckActions on_message(ConnId conn, const proto::Message& message, std::int64_t now_us);
  CheckActions on_connection_closed(ConnId conn, const std::string& reason);
  CheckActions on_agent_exited(int node, int exit_code, const std::string& error,
                               const std::string& stderr_tail);
  CheckActions on_timer(CheckTimer timer);
  CheckActions on_signal(int signal);

  const CheckResult& result() const { return result_; }
  bool finished() const { return phase_ == Phase::done; }
  std::optional<int> node_of(ConnId conn) const;
  const std::string& node_label(int node) const;

 private:
  enum class Phase { joining, probing, testing, collective, stopping, done };
  struct Node : FleetNode {
    bool down = false;
    bool facts_done = false;
    std::int64_t facts_sent_us = 0;
    std::int32_t nccl_first_rank = -1;  // -1: no GPUs in the NCCL test
    std::int32_t nccl_gpus = 0;
  };

  void on_facts(int node, const proto::HostFacts& facts, std::int64_t now_us);
  void on_probe_report(int node, const proto::ProbeReport& report);
  void apply_probe_reply(MasterProbe::Reply reply);
  void send_probes(std::vector<MasterProbe::Send> sends);
  void on_peer_report(int node, const proto::PeerTestReport& report);
  void on_nccl_report(int node, const proto::NcclReport& report);
  void after_matrix();
  void start_nccl();
  proto::NcclTest nccl_test_for(int node) const;
  void end_nccl(const std::string& error);
  void mark_down(int node, const std::string& why);
  bool up(int node) const;
  void advance();
  void start_probe();
  void choose_and_plan_matrix();
  void next_round();
  void end_round(const std::string& why_missing);
  void stop_all();
  void check_finished();
  PairCheck& pair(int from, int to);
  template <class Action>
  void emit(Action action) {
    out_.emplace_back(std::in_place_type<Action>, std::move(action));
  }
  void log(log::Level level, std::string text) { emit(check_action::Log{level, std::move(text)}); }
  CheckActions take();

  Config config_;
  RendezvousState rendezvous_;
  std::vector<Node> nodes_;
  std::map<ConnId, int> node_of_conn_;
  Phase phase_ = Phase::joining;
  CheckResult result_;
  std::vector<net::Candidate> candidates_;
  std::optional<MasterProbe> probe_;
  std::string probe_failure_;  // a host reached none of node 0's addresses, twice
  // Counts kept as events come, so that no event rescans every host.
  std::size_t settled_ = 0;      // hosts with their facts, or down
  std::size_t agents_gone_ = 0;  // hosts whose agent has exited
  std::vector<PairRound> rounds_;
  std::size_t round_ = 0;
  std::set<int> owed_;  // nodes whose report for the current round (or NCCL test) is due
  int nccl_root_ = -1;  // the node holding NCCL rank 0
  bool nccl_id_known_ = false;
  CheckActions out_;
};

}  // namespace dlaunch
