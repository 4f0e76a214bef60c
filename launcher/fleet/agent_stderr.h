// An agent's own diagnostics (its stderr): shown to the user as they come,
// prefixed with the host (the agent runs out of sight), and the end kept,
// bounded, for the message when the agent fails.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace dlaunch {

class AgentStderr {
 public:
  // Prints every complete or partial line of `bytes` as "[<label> agent] ..."
  // and keeps them. Returns the agent's report that it cannot reach the
  // rendezvous ("cannot connect to ADDR:PORT: <error>") when a line of
  // `bytes` completes one (protocol/agent_notes.h).
  std::optional<std::string> add(std::string_view bytes, const std::string& label);
  // The last `n` lines kept, joined for a one-line message.
  std::string last(std::size_t n) const;

 private:
  std::string text_;
  // The line being written, for recognising reports that arrive in pieces.
  std::string line_;
};

}  // namespace dlaunch
