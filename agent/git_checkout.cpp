#include "agent/git_checkout.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <utility>
#include <vector>

#include "common/captured_command.h"
#include "common/file_lock.h"
#include "common/posix.h"
#include "common/text.h"
#include "protocol/auth.h"

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

// A job holding the checkout: its hold file's first two lines.
struct Holder {
  std::string commit;
  std::string job;
};

std::string short_commit(const std::string& commit) {
  return commit.substr(0, 12);
}

// The jobs whose agents hold the checkout now. A hold file that nobody holds
// locked is an ended agent's, and is removed. Called under the code lock, so
// no hold is being written meanwhile.
std::vector<Holder> live_holders(const std::string& jobs_dir) {
  std::vector<Holder> live;
  std::error_code ec;
  std::vector<std::string> paths;
  for (const auto& entry : std::filesystem::directory_iterator(jobs_dir, ec))
    paths.push_back(entry.path().string());
  for (const auto& path : paths) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) continue;
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0) {
      ::unlink(path.c_str());  // stale: its agent has ended
    } else if (errno == EWOULDBLOCK) {
      std::string text(4096, '\0');
      const ssize_t n = ::pread(fd, text.data(), text.size(), 0);
      text.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
      const auto lines = split_lines(text);
      if (lines.size() >= 2) live.push_back({lines[0], lines[1]});
    }
    ::close(fd);
  }
  return live;
}

Result<CheckoutHold> take_hold(const std::string& jobs_dir, const GitSpec& git) {
  std::error_code ec;
  std::filesystem::create_directories(jobs_dir, ec);
  if (ec) return fail("cannot create " + jobs_dir + ": " + ec.message());
  const std::string path =
      jobs_dir + "/" + std::to_string(::getpid()) + "-" + auth::to_hex(auth::random_bytes(6));
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return fail("cannot create " + path + ": " + std::strerror(errno));
  CheckoutHold hold(path, fd);
  if (::flock(fd, LOCK_EX) != 0 || !write_all(fd, git.commit + "\n" + git.job + "\n"))
    return fail("cannot write " + path + ": " + std::strerror(errno));
  return hold;
}

}  // namespace

CheckoutHold::CheckoutHold(CheckoutHold&& other) noexcept
    : path_(std::move(other.path_)), fd_(std::exchange(other.fd_, -1)) {}

CheckoutHold::~CheckoutHold() {
  if (fd_ < 0) return;
  ::unlink(path_.c_str());
  ::close(fd_);
}

Result<GitCheckout> checkout_git(const GitSpec& git, const std::string& workdir,
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
  const std::string jobs_dir = code + "/." + git.name + ".dlaunch-jobs";
  bool shared = false;  // a running job holds the tree at this very commit
  for (const auto& holder : live_holders(jobs_dir)) {
    if (holder.commit == git.commit) {
      shared = true;
      continue;
    }
    return fail(dir + " is checked out at " + short_commit(holder.commit) + " for job '" +
                holder.job + "', which is running (here or on a host sharing the directory); " +
                "this job wants " + short_commit(git.commit) +
                " and a running job's code never changes under it: give this job another " +
                "--workdir, or wait for '" + holder.job + "' to end");
  }
  auto hold = take_hold(jobs_dir, git);
  if (!hold) return fail(hold.error());
  // Left as it is: a checkout again could reset files under the running job.
  if (shared) return GitCheckout{dir, std::move(*hold)};
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
  // Submodules at the commits this one records, as `git clone
  // --recurse-submodules` would have them; an empty directory would fail the
  // job far from its cause.
  if (fs::exists(dir + "/.gitmodules", ec)) {
    auto updated =
        in_dir.must({"submodule", "update", "--init", "--recursive", "--force", "--quiet"},
                    "the submodules of " + git.url + " at " + short_commit(git.commit) +
                        " (git submodule update --init --recursive)");
    if (!updated) return fail(updated.error());
  }
  return GitCheckout{dir, std::move(*hold)};
}

std::string checkout_commit(const std::string& dir) {
  const auto r =
      run_captured({"git", "-C", dir, "rev-parse", "--verify", "HEAD"}, std::chrono::seconds(30));
  const auto lines = split_lines(r.out);
  return r.ok() && !lines.empty() ? lines.front() : "";
}

}  // namespace dlaunch
