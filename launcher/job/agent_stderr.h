// An agent's own diagnostics (its stderr): shown to the user as they come,
// prefixed with the host (the agent runs out of sight), and the end kept,
// bounded, for the message when the agent fails.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace dlaunch {

class AgentStderr {
 public:
  // Prints every complete or partial line of `bytes` as "[<label> agent] ..."
  // and keeps them.
  void add(std::string_view bytes, const std::string& label);
  // The last `n` lines kept, joined for a one-line message.
  std::string last(std::size_t n) const;

 private:
  std::string text_;
};

}  // namespace dlaunch
