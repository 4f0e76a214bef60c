#include "common/agent_arch.h"

#include <filesystem>

namespace dlaunch {

std::string_view native_arch() {
#if defined(__x86_64__)
  return "x86_64";
#elif defined(__aarch64__)
  return "aarch64";
#else
#error "dlaunch builds agents for x86_64 and aarch64"
#endif
}

std::string normalize_arch(std::string_view uname_machine) {
  if (uname_machine == "amd64") return "x86_64";
  if (uname_machine == "arm64") return "aarch64";
  return std::string(uname_machine);
}

std::map<std::string, std::string> agents_by_arch(const std::string& native_agent,
                                                  const std::string& extra_dir) {
  namespace fs = std::filesystem;
  std::map<std::string, std::string> agents;
  constexpr std::string_view kPrefix = "dlaunch-agent-";
  for (const fs::path& dir : {fs::path(native_agent).parent_path(), fs::path(extra_dir)}) {
    std::error_code ec;
    if (dir.empty()) continue;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      const std::string name = entry.path().filename().string();
      if (!name.starts_with(kPrefix) || !entry.is_regular_file(ec)) continue;
      agents.try_emplace(name.substr(kPrefix.size()), entry.path().lexically_normal().string());
    }
  }
  // This machine's own agent is the one dlaunch was told to use.
  agents[std::string(native_arch())] = native_agent;
  return agents;
}

std::string no_agent_message(std::string_view arch,
                             const std::map<std::string, std::string>& agents) {
  std::string have;
  for (const auto& [name, path] : agents) have += (have.empty() ? "" : ", ") + name;
  return "the host is " +
         (arch.empty() ? std::string("of an unknown architecture") : std::string(arch)) +
         ", and this dlaunch carries agents for " + have +
         " only (build with -DDLAUNCH_AGENT_ARCHES=\"x86_64;aarch64\", or install the .deb "
         "that carries both)";
}

}  // namespace dlaunch
