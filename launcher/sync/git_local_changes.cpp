#include "launcher/sync/git_local_changes.h"

#include <chrono>
#include <filesystem>

#include "common/captured_command.h"
#include "common/text.h"

namespace dlaunch {
namespace {

std::string trailing_slashes_off(std::string text) {
  while (text.size() > 1 && text.back() == '/') text.pop_back();
  return text;
}

std::string real_path(const std::string& path) {
  std::error_code ec;
  const auto real = std::filesystem::canonical(path, ec);
  return ec ? trailing_slashes_off(path) : real.string();
}

CapturedOutput git_in(const std::string& directory, std::vector<std::string> args) {
  std::vector<std::string> argv = {"git", "-C", directory};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_captured(argv, std::chrono::seconds(20), 1024 * 1024, {{"GIT_TERMINAL_PROMPT", "0"}});
}

}  // namespace

bool work_tree_of(const std::string& url, const std::string& top_level,
                  const std::vector<std::string>& remote_urls) {
  const std::string wanted = trailing_slashes_off(url);
  for (const auto& remote : remote_urls)
    if (trailing_slashes_off(remote) == wanted) return true;
  // A repository given by its path: this tree itself, or its .git.
  if (wanted.find("://") != std::string::npos || wanted.empty()) return false;
  const std::string real = real_path(wanted);
  const std::string top = real_path(top_level);
  return real == top || real == top + "/.git";
}

std::optional<std::string> local_changes_warning(const std::string& directory,
                                                 const std::string& url, const std::string& runs) {
  const auto top = git_in(directory, {"rev-parse", "--show-toplevel"});
  if (!top.ok()) return std::nullopt;
  const auto top_lines = split_lines(top.out);
  if (top_lines.empty()) return std::nullopt;
  const auto remotes = git_in(directory, {"config", "--get-regexp", "^remote\\..*\\.url$"});
  std::vector<std::string> urls;
  for (const auto& line : split_lines(remotes.out))
    if (const auto space = line.find(' '); space != std::string::npos)
      urls.push_back(line.substr(space + 1));
  if (!work_tree_of(url, top_lines.front(), urls)) return std::nullopt;
  const auto status = git_in(directory, {"status", "--porcelain", "--untracked-files=no"});
  if (!status.ok()) return std::nullopt;
  const auto changed = split_lines(status.out).size();
  if (changed == 0) return std::nullopt;
  return "the git work tree here (" + top_lines.front() + ") has uncommitted changes to " +
         grouped(changed) + (changed == 1 ? " file" : " files") +
         " that the job will not see: every host runs " + runs + " of " + url +
         " (commit and push them first to run them)";
}

}  // namespace dlaunch
