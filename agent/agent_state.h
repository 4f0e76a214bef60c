// The agent's life as one state machine: events in (messages from the
// coordinator, signals, the ranks ending, the sweep done), the next state and
// actions out. Pure: no sockets, no processes, no clock; `Agent` wires the I/O
// to it and carries out the actions in order.
//
//   joining -> waiting_for_assignment -> running_round -> sweeping -> waiting...
//                                          |  Stop{restart}: stopping_for_restart -> sweeping
//                                          |  Stop, Reject, signal: stopping_for_good
//                                          |  coordinator lost: lost_coordinator
//   stopping_for_good -> sweeping_for_good -> finished
//   lost_coordinator  -> sweeping_after_loss -> finished
//
// Between rounds (joining, waiting, sweeping) a final stop finishes at once: no
// ranks are left to wait for, and leftovers die with the guardian.
#pragma once

#include <string>
#include <variant>
#include <vector>

#include "protocol/messages.h"

namespace dlaunch {

enum class AgentState {
  joining,                 // connecting and authenticating to the rendezvous
  waiting_for_assignment,  // joined, no ranks of ours exist
  running_round,           // this node's ranks of the current round are running
  stopping_for_restart,    // ranks told to stop; another round may follow
  stopping_for_good,       // ranks told to stop; the agent exits after them
  lost_coordinator,        // ranks told to stop because nobody is listening any more
  sweeping,                // every rank ended; killing leftovers before AgentDone
  sweeping_for_good,       // same, then exit
  sweeping_after_loss,     // same, then exit without telling anyone
  finished,                // exit code decided; nothing more happens
};

const char* to_string(AgentState state);

namespace agent_event {
struct Joined {};
struct AssignmentReceived {
  proto::Assign assign;
};
struct StopReceived {
  proto::Stop stop;
};
// Refused by the coordinator (a Reject, in the handshake or after) or a peer
// that could not prove the secret: exit 2. `reason` is the whole line.
struct RejectReceived {
  std::string reason;
};
struct StopSignalled {
  int signal = 0;  // SIGINT or SIGTERM
};
struct CoordinatorLost {
  std::string why;  // the link dropped, or the coordinator closed our stdin
  // Our stdin closed: only a live coordinator that chose to stop this agent
  // can read our stderr then (a dead one, or a dropped SSH connection, reads
  // nothing), so saying it would only look like one more failure.
  bool input_closed = false;
};
struct RanksEnded {};      // every rank of the round has had its exit reported
struct LeftoversSwept {};  // no descendant is left (or the sweep gave up)
}  // namespace agent_event

using AgentEvent = std::variant<agent_event::Joined, agent_event::AssignmentReceived,
                                agent_event::StopReceived, agent_event::RejectReceived,
                                agent_event::StopSignalled, agent_event::CoordinatorLost,
                                agent_event::RanksEnded, agent_event::LeftoversSwept>;

namespace agent_action {
struct StartRound {
  proto::Assign assign;
};
struct TerminateRanks {  // SIGTERM each rank's group, SIGKILL after grace_s
  std::string why;
  int grace_s = 0;
};
struct KillAfter {  // the coordinator shortened or lengthened the grace
  int grace_s = 0;
};
struct SweepLeftovers {};
struct SendAgentDone {
  int round = 0;
};
struct AnnounceStop {  // the job's reason for ending, for a user watching this node
  std::string reason;
};
struct DropCoordinator {};
struct LogWarning {
  std::string text;
};
struct LogError {
  std::string text;
};
struct Finish {
  int exit_code = 0;
};
}  // namespace agent_action

using AgentAction =
    std::variant<agent_action::StartRound, agent_action::TerminateRanks, agent_action::KillAfter,
                 agent_action::SweepLeftovers, agent_action::SendAgentDone,
                 agent_action::AnnounceStop, agent_action::DropCoordinator,
                 agent_action::LogWarning, agent_action::LogError, agent_action::Finish>;

class AgentStateMachine {
 public:
  struct Node {
    int nproc = 1;
    int grace_s = 0;  // the launch spec's grace, unless a Stop says otherwise
  };

  explicit AgentStateMachine(Node node) : node_(node) {}

  std::vector<AgentAction> on(const AgentEvent& event);

  AgentState state() const { return state_; }
  int exit_code() const { return exit_code_; }
  // The coordinator ended the job with a final Stop (not a crash or a lost link).
  bool stopped_by_coordinator() const { return stopped_by_coordinator_; }

 private:
  using Actions = std::vector<AgentAction>;

  void on_event(const agent_event::Joined&, Actions& out);
  void on_event(const agent_event::AssignmentReceived& e, Actions& out);
  void on_event(const agent_event::StopReceived& e, Actions& out);
  void on_event(const agent_event::RejectReceived& e, Actions& out);
  void on_event(const agent_event::StopSignalled& e, Actions& out);
  void on_event(const agent_event::CoordinatorLost& e, Actions& out);
  void on_event(const agent_event::RanksEnded&, Actions& out);
  void on_event(const agent_event::LeftoversSwept&, Actions& out);

  bool round_active() const;
  bool between_rounds() const;
  bool coordinator_gone() const;
  bool final_stop_decided() const;
  void terminate(const std::string& why, int grace_s, AgentState next, Actions& out);
  void finish(int code, Actions& out);

  Node node_;
  AgentState state_ = AgentState::joining;
  int round_ = 0;
  int final_code_ = 0;  // the exit code once no further round will come
  bool stopped_by_coordinator_ = false;
  int exit_code_ = 0;
};

}  // namespace dlaunch
