#include "launcher/config/git_source.h"

namespace dlaunch {
namespace {

// Where the URL's path begins: "@" beyond it may start a REF.
std::size_t path_start(std::string_view text) {
  if (const auto scheme = text.find("://"); scheme != std::string_view::npos) {
    const auto slash = text.find('/', scheme + 3);
    return slash == std::string_view::npos ? text.size() : slash;
  }
  // scp-like user@host:path (a ':' before any '/'); else a local path.
  const auto colon = text.find(':');
  const auto slash = text.find('/');
  if (colon != std::string_view::npos && (slash == std::string_view::npos || colon < slash))
    return colon + 1;
  return 0;
}

}  // namespace

Result<GitSource> parse_git_source(std::string_view text) {
  const std::string given = "--sync-git " + std::string(text);
  GitSource source;
  const auto at = text.rfind('@');
  if (at != std::string_view::npos && at >= path_start(text)) {
    source.url = std::string(text.substr(0, at));
    source.ref = std::string(text.substr(at + 1));
    if (source.ref.empty())
      return fail(given + ": nothing after '@' (expected URL@BRANCH, TAG or COMMIT)");
  } else {
    source.url = std::string(text);
  }
  if (source.url.empty()) return fail(given + ": no repository (expected URL[@REF])");
  if (source.url.starts_with('-')) return fail(given + ": a repository may not start with '-'");
  if (git_repository_name(source.url).empty())
    return fail(given + ": no repository name at the end of the URL");
  return source;
}

std::string git_repository_name(std::string_view url) {
  while (!url.empty() && url.back() == '/') url.remove_suffix(1);
  if (url.ends_with(".git")) url.remove_suffix(4);
  const auto cut = url.find_last_of("/:");
  std::string name(cut == std::string_view::npos ? url : url.substr(cut + 1));
  if (name == "." || name == "..") return "";
  return name;
}

}  // namespace dlaunch
