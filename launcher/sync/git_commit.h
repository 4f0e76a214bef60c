// --sync-git's one commit: the coordinator turns REF into a full object name
// once, before any host starts, so that a branch that moves while the hosts
// clone cannot give two hosts two commits.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace dlaunch {

// The commit `ref` names in `git ls-remote URL` output ("<object>\t<name>"
// lines): empty `ref` is HEAD; else, in this order, a ref named exactly so
// (HEAD, refs/...), the branch refs/heads/REF, the tag refs/tags/REF (peeled
// to its commit when annotated). nullopt when none matches.
std::optional<std::string> commit_for_ref(std::string_view ls_remote, std::string_view ref);

// A full object name (40 hex digits, or 64 in a SHA-256 repository).
bool is_full_object_name(std::string_view text);

struct GitResolution {
  std::string commit;  // set on success
  std::string error;   // else the line to print, with git's own words
};

// A full object name as given; otherwise asks the remote (`git ls-remote`,
// which reads a local repository's path too) with this process's credentials.
GitResolution resolve_git_commit(const std::string& url, const std::string& ref);

}  // namespace dlaunch
