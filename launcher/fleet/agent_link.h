// What a policy that drives agents (JobPolicy for a job, CheckPolicy for
// `dlaunch check`) asks of them, of the launcher's log and of the one runner
// (fleet/fleet_runner.h): one set of action types for both. The agents' are
// carried out by agent_link_perform.h; timers and the end by the runner.
#pragma once

#include <chrono>
#include <sstream>
#include <string>
#include <type_traits>

#include "common/log.h"
#include "protocol/messages.h"
#include "rendezvous/state.h"

namespace dlaunch::agent_link {

struct Send {
  ConnId to = 0;
  proto::Message message;
};
struct CloseConnection {
  ConnId conn = 0;
  std::string reason;
};
struct CloseStdin {
  int node = 0;
};
struct KillAgent {
  int node = 0;
};
// A line for the launcher's log (shown by level: --verbose, --quiet).
struct Log {
  log::Level level = log::Level::info;
  std::string text;
};

// A Log whose text is `args` written one after the other.
template <class... Args>
Log log_line(log::Level level, const Args&... args) {
  std::ostringstream out;
  (out << ... << args);
  return {level, out.str()};
}

// A policy's named timer (`Which`: its enum). Arming an armed timer replaces
// its deadline, as asio's expires_after does; its expiry comes back to the
// policy's on_timer.
template <class Which>
struct ArmTimer {
  Which timer{};
  std::chrono::milliseconds after{0};
};
template <class Which>
struct CancelTimer {
  Which timer{};
};
// The run is over; nothing more will come out of the policy. The runner stops
// its timers, the agents' links and the io loop.
struct Finish {
  int exit_code = 0;
};

template <class Action>
inline constexpr bool is_action =
    std::is_same_v<Action, Send> || std::is_same_v<Action, CloseConnection> ||
    std::is_same_v<Action, CloseStdin> || std::is_same_v<Action, KillAgent> ||
    std::is_same_v<Action, Log>;

template <class Action>
inline constexpr bool is_arm_timer = false;
template <class Which>
inline constexpr bool is_arm_timer<ArmTimer<Which>> = true;
template <class Action>
inline constexpr bool is_cancel_timer = false;
template <class Which>
inline constexpr bool is_cancel_timer<CancelTimer<Which>> = true;

}  // namespace dlaunch::agent_link
