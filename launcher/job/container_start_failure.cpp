#include "launcher/job/container_start_failure.h"

#include <string_view>

namespace dlaunch {

std::optional<std::string> container_start_failure(const std::vector<std::string>& last_lines) {
  if (last_lines.empty()) return std::nullopt;
  const std::string_view line = last_lines.back();
  const bool init = line.find("(catatonit:") != std::string_view::npos ||
                    line.find("[FATAL tini ") != std::string_view::npos;
  if (!init) return std::nullopt;
  for (std::string_view marker : {"failed to exec pid1: ", " failed: "}) {
    if (const auto at = line.rfind(marker); at != std::string_view::npos)
      return std::string(line.substr(at + marker.size()));
  }
  return std::nullopt;
}

}  // namespace dlaunch
