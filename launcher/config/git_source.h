// --sync-git URL[@REF]: which repository, and which branch, tag or commit of
// it. The URL is any git takes: https://host/org/repo.git, ssh://..., the
// scp-like user@host:org/repo.git, git://..., or a path. "@REF" is split off
// only where it cannot belong to the URL: after the path began (past "://"'s
// host, past the scp-like form's ':', anywhere in a plain path).
#pragma once

#include <string>
#include <string_view>

#include "common/result.h"

namespace dlaunch {

struct GitSource {
  std::string url;
  std::string ref;  // empty: the remote's HEAD
};

// The source, or the error to print (naming --sync-git and the text).
Result<GitSource> parse_git_source(std::string_view text);

// The checkout's directory name under <workdir>/code: the URL's last path
// component without ".git" (Arena's and git clone's choice).
std::string git_repository_name(std::string_view url);

}  // namespace dlaunch
