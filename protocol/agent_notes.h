// What an agent says on its stderr that the coordinator acts on, besides
// showing it. The agent's stderr is its only way to speak before it has
// reached the rendezvous, so these lines are a contract of their own: the
// agent writes them, the coordinator recognises them, both through here.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace dlaunch::proto {

// Ends the line an agent writes once it has failed to connect to the
// rendezvous for a while: "cannot connect to ADDR:PORT: <error> (the
// rendezvous; still trying until the timeout)".
inline constexpr std::string_view kRendezvousUnreachableNote =
    "(the rendezvous; still trying until the timeout)";

// "cannot connect to ADDR:PORT: <error>" when `line` (one line of an agent's
// stderr, with whatever prefix the agent's log adds) is that report.
inline std::optional<std::string> rendezvous_unreachable(std::string_view line) {
  const auto note = line.rfind(kRendezvousUnreachableNote);
  const auto start = line.find("cannot connect to ");
  if (note == std::string_view::npos || start == std::string_view::npos || start > note)
    return std::nullopt;
  auto what = line.substr(start, note - start);
  while (!what.empty() && what.back() == ' ') what.remove_suffix(1);
  return std::string(what);
}

}  // namespace dlaunch::proto
