#include "agent/git_checkout.h"

#include <chrono>
#include <filesystem>
#include <utility>

#include "common/captured_command.h"
#include "common/file_lock.h"
#include "common/text.h"

namespace dlaunch {
namespace {

// A clone of a large repository over a slow link takes minutes.
constexpr auto kGitTimeout = std::chrono::minutes(30);

class GitRunner {
 public:
  GitRunner(const std::string& dir, std::map<std::string, std::string> env)
      : dir_(dir), env_(std::move(env)) {
    env_["GIT_TERMINAL_PROMPT"] = "0";
  }

  CapturedOutput run(std::vector<std::string> args) const {
    std::vector<std::string> argv = {"git", "-C", dir_};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_captured(argv, kGitTimeout, 64 * 1024, env_);
  }

  Result<void> must(std::vector<std::string> args, const std::string& what) const {
    const auto r = run(std::move(args));
    if (!r.started) return fail("git is not installed");
    if (!r.ok()) return fail(what + ": " + words(r));
    return {};
  }

  static std::string words(const CapturedOutput& r) {
    return r.timed_out ? "no end in 30 minutes" : last_words(r);
  }

 private:
  std::string dir_;
  std::map<std::string, std::string> env_;
};

}  // namespace

Result<std::string> checkout_git(const GitSpec& git, const std::string& workdir,
                                 const std::map<std::string, std::string>& job_env) {
  namespace fs = std::filesystem;
  const std::string code = workdir + "/code";
  const std::string dir = code + "/" + git.name;
  std::error_code ec;
  fs::create_directories(code, ec);
  if (ec) return fail("cannot create " + code + ": " + ec.message());
  // Held while this host works on the checkout.
  auto lock = FileLock::take(code + "/." + git.name + ".dlaunch-lock", 0644);
  if (!lock) return fail(lock.error());
  const GitRunner in_code(code, job_env);
  const GitRunner in_dir(dir, job_env);
  if (!fs::exists(dir + "/.git", ec)) {
    if (fs::exists(dir, ec) && !fs::is_empty(dir, ec))
      return fail(dir + " exists and is not a git checkout: move it away");
    if (auto cloned = in_code.must({"clone", "--quiet", "--no-checkout", "--", git.url, git.name},
                                   "git clone " + git.url);
        !cloned)
      return fail(cloned.error());
  } else if (auto set = in_dir.must({"remote", "set-url", "origin", git.url}, "git remote set-url");
             !set) {
    return fail(set.error());
  }
  const std::string wanted = git.commit + "^{commit}";
  if (!in_dir.run({"cat-file", "-e", wanted}).ok()) {
    // Most servers give a reachable commit by its name; others only refs.
    if (!in_dir.run({"fetch", "--quiet", "origin", git.commit}).ok()) {
      auto fetched = in_dir.must(
          {"fetch", "--quiet", "--tags", "origin", "+refs/heads/*:refs/remotes/origin/*"},
          "git fetch " + git.url);
      if (!fetched) return fail(fetched.error());
    }
    if (!in_dir.run({"cat-file", "-e", wanted}).ok())
      return fail("commit " + git.commit + " is not in " + git.url + " as seen from here");
  }
  auto checked_out = in_dir.must({"checkout", "--quiet", "--force", "--detach", git.commit},
                                 "git checkout " + git.commit);
  if (!checked_out) return fail(checked_out.error());
  return dir;
}

std::string checkout_commit(const std::string& dir) {
  const auto r =
      run_captured({"git", "-C", dir, "rev-parse", "--verify", "HEAD"}, std::chrono::seconds(30));
  const auto lines = split_lines(r.out);
  return r.ok() && !lines.empty() ? lines.front() : "";
}

}  // namespace dlaunch
