#include "protocol/relative_path.h"

namespace dlaunch {

bool safe_relative_path(std::string_view path) {
  if (path.empty() || path.front() == '/' || path.find('\0') != std::string_view::npos)
    return false;
  std::size_t start = 0;
  for (;;) {
    const auto slash = path.find('/', start);
    const auto part =
        path.substr(start, slash == std::string_view::npos ? path.npos : slash - start);
    if (part.empty() || part == "." || part == "..") return false;
    if (slash == std::string_view::npos) return true;
    start = slash + 1;
  }
}

}  // namespace dlaunch
