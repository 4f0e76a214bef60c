#include "agent/agent_state.h"

#include "common/posix.h"

namespace dlaunch {

using namespace agent_action;
using namespace agent_event;

namespace {
// In place, so that no variant is moved: GCC 12 warns about the moved-from
// alternatives' strings as possibly uninitialized.
template <class T>
void emit(std::vector<AgentAction>& out, T action) {
  out.emplace_back(std::in_place_type<T>, std::move(action));
}
}  // namespace

const char* to_string(AgentState state) {
  switch (state) {
    case AgentState::joining:
      return "joining";
    case AgentState::waiting_for_assignment:
      return "waiting for assignment";
    case AgentState::running_round:
      return "running a round";
    case AgentState::stopping_for_restart:
      return "stopping for restart";
    case AgentState::stopping_for_good:
      return "stopping for good";
    case AgentState::lost_coordinator:
      return "lost coordinator";
    case AgentState::sweeping:
      return "sweeping";
    case AgentState::sweeping_for_good:
      return "sweeping for good";
    case AgentState::sweeping_after_loss:
      return "sweeping after loss";
    case AgentState::finished:
      return "finished";
  }
  return "unknown";
}

std::vector<AgentAction> AgentStateMachine::on(const AgentEvent& event) {
  Actions out;
  std::visit([this, &out](const auto& e) { on_event(e, out); }, event);
  return out;
}

bool AgentStateMachine::round_active() const {
  return state_ == AgentState::running_round || state_ == AgentState::stopping_for_restart ||
         state_ == AgentState::stopping_for_good || state_ == AgentState::lost_coordinator;
}

bool AgentStateMachine::between_rounds() const {
  return state_ == AgentState::joining || state_ == AgentState::waiting_for_assignment ||
         state_ == AgentState::sweeping;
}

// Nothing can come from the coordinator any more, and nothing needs to.
bool AgentStateMachine::coordinator_gone() const {
  return state_ == AgentState::lost_coordinator || state_ == AgentState::sweeping_after_loss ||
         state_ == AgentState::finished;
}

bool AgentStateMachine::final_stop_decided() const {
  return state_ == AgentState::stopping_for_good || state_ == AgentState::sweeping_for_good ||
         coordinator_gone();
}

void AgentStateMachine::terminate(const std::string& why, int grace_s, AgentState next,
                                  Actions& out) {
  emit(out, TerminateRanks{why, grace_s});
  state_ = next;
}

void AgentStateMachine::finish(int code, Actions& out) {
  state_ = AgentState::finished;
  exit_code_ = code;
  emit(out, Finish{code});
}

void AgentStateMachine::on_event(const Joined&, Actions&) {
  if (state_ == AgentState::joining) state_ = AgentState::waiting_for_assignment;
}

void AgentStateMachine::on_event(const AssignmentReceived& e, Actions& out) {
  if (coordinator_gone()) return;
  if (round_active()) {
    emit(out, LogWarning{"ignoring an assignment while ranks of round " + std::to_string(round_) +
                         " are running"});
    return;
  }
  if (state_ == AgentState::sweeping || state_ == AgentState::sweeping_for_good) {
    // The coordinator assigns the next round only after our AgentDone; starting
    // ranks now would let the sweep kill them.
    emit(out, LogWarning{"ignoring an assignment while round " + std::to_string(round_) +
                         " is being cleaned up"});
    return;
  }
  const proto::Assign& a = e.assign;
  // The node rank may differ from the one this agent joined with: a spare
  // takes the place of a lost node (launcher/fleet/membership.h). The rank
  // count is this host's own and cannot.
  if (a.local_world_size != node_.nproc) {
    emit(out,
         LogError{"assignment does not match this node (" + std::to_string(a.local_world_size) +
                  " ranks for node " + std::to_string(a.node_rank) + "; this host runs " +
                  std::to_string(node_.nproc) + ")"});
    final_code_ = 2;
    finish(2, out);
    return;
  }
  round_ = a.round;
  state_ = AgentState::running_round;
  emit(out, StartRound{a});
}

void AgentStateMachine::on_event(const StopReceived& e, Actions& out) {
  if (coordinator_gone()) return;
  const proto::Stop& stop = e.stop;
  if (!stop.restart) {
    final_code_ = stop.exit_code;
    stopped_by_coordinator_ = true;
    if (!stop.reason.empty()) emit(out, AnnounceStop{stop.reason});
  }
  const int grace_s = stop.grace_s >= 0 ? stop.grace_s : node_.grace_s;
  switch (state_) {
    case AgentState::running_round:
      terminate(stop.reason, grace_s,
                stop.restart ? AgentState::stopping_for_restart : AgentState::stopping_for_good,
                out);
      return;
    case AgentState::stopping_for_restart:
    case AgentState::stopping_for_good:
      if (stop.grace_s >= 0) emit(out, KillAfter{stop.grace_s});
      if (!stop.restart) state_ = AgentState::stopping_for_good;
      return;
    default:
      // Between rounds: nothing to stop. A restart waits for its assignment.
      if (!stop.restart || final_stop_decided()) finish(final_code_, out);
      return;
  }
}

void AgentStateMachine::on_event(const RejectReceived& e, Actions& out) {
  if (coordinator_gone()) return;
  emit(out, LogError{e.reason});
  final_code_ = 2;
  if (state_ == AgentState::running_round) {
    terminate(e.reason, node_.grace_s, AgentState::stopping_for_good, out);
  } else if (round_active()) {
    state_ = AgentState::stopping_for_good;
  } else {
    finish(final_code_, out);
  }
}

void AgentStateMachine::on_event(const StopSignalled& e, Actions& out) {
  if (state_ == AgentState::finished) return;
  final_code_ = 128 + e.signal;
  switch (state_) {
    case AgentState::running_round:
      terminate("agent received " + signal_name(e.signal), node_.grace_s,
                AgentState::stopping_for_good, out);
      return;
    case AgentState::stopping_for_restart:
      state_ = AgentState::stopping_for_good;
      return;
    case AgentState::stopping_for_good:
    case AgentState::lost_coordinator:
      return;  // already stopping; the code is now the signal's
    default:
      finish(final_code_, out);
      return;
  }
}

void AgentStateMachine::on_event(const CoordinatorLost& e, Actions& out) {
  if (coordinator_gone()) return;
  if (!final_stop_decided()) {
    // Without a coordinator the job cannot succeed; an exit code it already
    // sent (a final Stop) is kept.
    if (!e.input_closed)
      emit(out, LogError{e.why + (round_active() ? "; stopping this node's ranks" : "")});
    final_code_ = 1;
  }
  emit(out, DropCoordinator{});
  if (state_ == AgentState::running_round) {
    terminate(e.why, node_.grace_s, AgentState::lost_coordinator, out);
  } else if (round_active()) {
    state_ = AgentState::lost_coordinator;
  } else {
    finish(final_code_, out);
  }
}

void AgentStateMachine::on_event(const RanksEnded&, Actions& out) {
  switch (state_) {
    case AgentState::running_round:
    case AgentState::stopping_for_restart:
      state_ = AgentState::sweeping;
      break;
    case AgentState::stopping_for_good:
      state_ = AgentState::sweeping_for_good;
      break;
    case AgentState::lost_coordinator:
      state_ = AgentState::sweeping_after_loss;
      break;
    default:
      return;
  }
  // Descendants that outlived their rank (setsid daemons, workers that ignore
  // SIGTERM) were re-parented to us: they are part of the job, so end them.
  emit(out, SweepLeftovers{});
}

void AgentStateMachine::on_event(const LeftoversSwept&, Actions& out) {
  switch (state_) {
    case AgentState::sweeping:
      emit(out, SendAgentDone{round_});
      state_ = AgentState::waiting_for_assignment;
      return;
    case AgentState::sweeping_for_good:
      emit(out, SendAgentDone{round_});
      finish(final_code_, out);
      return;
    case AgentState::sweeping_after_loss:
      finish(final_code_, out);
      return;
    default:
      return;
  }
}

}  // namespace dlaunch
