// What a policy that drives agents (JobPolicy for a job, CheckPolicy for
// `dlaunch check`) asks of them and of the launcher's log: one set of action
// types for both, carried out by agent_link_perform.h in both runners.
#pragma once

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

template <class Action>
inline constexpr bool is_action =
    std::is_same_v<Action, Send> || std::is_same_v<Action, CloseConnection> ||
    std::is_same_v<Action, CloseStdin> || std::is_same_v<Action, KillAgent> ||
    std::is_same_v<Action, Log>;

}  // namespace dlaunch::agent_link
