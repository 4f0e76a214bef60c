#include "launcher/job/agent_stderr.h"

#include "common/console.h"
#include "common/text.h"

namespace dlaunch {

void AgentStderr::add(std::string_view bytes, const std::string& label) {
  text_.append(bytes);
  // Only the end is ever shown; keep a bounded amount of a chatty agent's output.
  constexpr std::size_t kMaxKept = 64 * 1024;
  if (text_.size() > kMaxKept) text_.erase(0, text_.size() - kMaxKept / 2);
  const std::string prefix = "[" + label + " agent] ";
  for (const auto& line : split_lines(bytes)) console().line(prefix + line);
}

std::string AgentStderr::last(std::size_t n) const {
  return last_lines(text_, n);
}

}  // namespace dlaunch
