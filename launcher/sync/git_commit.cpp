#include "launcher/sync/git_commit.h"

#include <chrono>

#include "common/captured_command.h"
#include "common/text.h"

namespace dlaunch {

bool is_full_object_name(std::string_view text) {
  if (text.size() != 40 && text.size() != 64) return false;
  for (const char c : text)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

std::optional<std::string> commit_for_ref(std::string_view ls_remote, std::string_view ref) {
  const std::string wanted = ref.empty() ? "HEAD" : std::string(ref);
  const std::string candidates[] = {wanted, "refs/heads/" + wanted, "refs/tags/" + wanted + "^{}",
                                    "refs/tags/" + wanted};
  for (const auto& candidate : candidates) {
    for (const auto& line : split_lines(ls_remote)) {
      const auto tab = line.find('\t');
      if (tab == std::string::npos) continue;
      if (line.substr(tab + 1) == candidate && is_full_object_name(line.substr(0, tab)))
        return line.substr(0, tab);
    }
  }
  return std::nullopt;
}

GitResolution resolve_git_commit(const std::string& url, const std::string& ref) {
  if (is_full_object_name(ref)) return {ref, ""};
  // No terminal prompt: a coordinator waiting on a password nobody sees.
  const auto run = run_captured({"git", "ls-remote", "--", url}, std::chrono::minutes(2),
                                16 * 1024 * 1024, {{"GIT_TERMINAL_PROMPT", "0"}});
  const std::string given = "--sync-git " + url + (ref.empty() ? "" : "@" + ref);
  if (!run.started) return {"", given + ": git is not installed here (it resolves REF)"};
  if (run.timed_out) return {"", given + ": git ls-remote had no answer in 2 minutes"};
  if (run.exit_code != 0) return {"", given + ": git ls-remote failed: " + last_words(run)};
  if (auto commit = commit_for_ref(run.out, ref)) return {*commit, ""};
  return {"", given + ": the repository has no branch or tag '" + (ref.empty() ? "HEAD" : ref) +
                  "' (a commit must be given in full, 40 hex digits)"};
}

}  // namespace dlaunch
