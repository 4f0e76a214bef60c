#include "launcher/transport/agent_binary.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>

namespace dlaunch {

Result<std::string> find_agent_binary() {
  std::error_code ec;
  if (const char* env = std::getenv("DLAUNCH_AGENT"); env && *env) {
    // Absolute, so that every message about it names the file itself.
    const auto absolute = std::filesystem::absolute(env, ec);
    return ec ? std::string(env) : absolute.lexically_normal().string();
  }
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return std::string("dlaunch-agent");
  for (const auto& candidate : {self.parent_path() / "dlaunch-agent",
                                self.parent_path() / "../lib/dlaunch/dlaunch-agent"}) {
    if (::access(candidate.c_str(), X_OK) == 0) return candidate.lexically_normal().string();
  }
  return fail("cannot find dlaunch-agent next to dlaunch; set DLAUNCH_AGENT to its path");
}

}  // namespace dlaunch
