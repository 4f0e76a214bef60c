#include "launcher/fleet/agent_stderr.h"

#include "common/console.h"
#include "common/text.h"
#include "protocol/agent_notes.h"

namespace dlaunch {

std::optional<std::string> AgentStderr::add(std::string_view bytes, const std::string& label) {
  text_.append(bytes);
  // Only the end is ever shown; keep a bounded amount of a chatty agent's output.
  constexpr std::size_t kMaxKept = 64 * 1024;
  if (text_.size() > kMaxKept) text_.erase(0, text_.size() - kMaxKept / 2);
  const std::string prefix = "[" + label + " agent] ";
  for (const auto& line : split_lines(bytes)) console().line(prefix + line);

  std::optional<std::string> report;
  for (const char c : bytes) {
    if (c != '\n') {
      // A report is one short line; a longer one is something else.
      if (line_.size() < 4096) line_.push_back(c);
      continue;
    }
    if (auto r = proto::rendezvous_unreachable(line_)) report = std::move(r);
    line_.clear();
  }
  return report;
}

std::string AgentStderr::last(std::size_t n) const {
  return last_lines(text_, n);
}

}  // namespace dlaunch
