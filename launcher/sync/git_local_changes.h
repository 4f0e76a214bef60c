// --sync-git runs a commit of the repository, never the files in front of the
// user: edits not yet committed and pushed are not in the job. A user who
// starts a job from a work tree of that repository with such edits is told
// so, before anything starts (the job still runs: it may be what they meant).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace dlaunch {

// Whether the work tree at `top_level`, whose remotes' URLs are
// `remote_urls`, is a copy of the repository at `url` (one of its remotes, or
// the repository itself given by path, both resolved to real paths). Runs no
// git.
bool work_tree_of(const std::string& url, const std::string& top_level,
                  const std::vector<std::string>& remote_urls);

// The warning for the work tree containing `directory` when it is a copy of
// `url` with uncommitted changes to tracked files; nothing otherwise (not a
// git tree, another repository, a clean tree, no git installed).
// `runs`: what every host runs ("commit 1a2b3c4d5e6f", "main").
std::optional<std::string> local_changes_warning(const std::string& directory,
                                                 const std::string& url, const std::string& runs);

}  // namespace dlaunch
