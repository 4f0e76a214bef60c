// The one check for a path a peer sends that names a file under a directory
// (--sync entries, --tensorboard-dir chunks): relative, with no empty, "." or
// ".." component and no NUL, so it cannot reach outside that directory.
#pragma once

#include <string_view>

namespace dlaunch {

bool safe_relative_path(std::string_view path);

}  // namespace dlaunch
