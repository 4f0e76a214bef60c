#include "common/captured_command.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "common/posix.h"
#include "common/spawn.h"
#include "common/text.h"

namespace dlaunch {

std::string last_words(const CapturedOutput& run) {
  const std::string& said = run.err.empty() ? run.out : run.err;
  // A tool's cause often comes first, and advice after it: git's "fatal:
  // '/x' does not appear to be a git repository" before "Please make sure you
  // have the correct access rights". Those lines win over the last ones.
  std::string causes;
  int kept = 0;
  for (const auto& line : split_lines(said)) {
    if (kept < 3 && (line.starts_with("fatal:") || line.starts_with("error:"))) {
      causes += (causes.empty() ? "" : "\n") + line;
      ++kept;
    }
  }
  if (!causes.empty()) return causes;
  const auto text = last_lines(said, 3);
  return text.empty() ? "exit code " + std::to_string(run.exit_code) : text;
}

CapturedOutput run_captured(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                            std::size_t max_output,
                            const std::map<std::string, std::string>& extra_env) {
  CapturedOutput result;
  if (argv.empty()) return result;
  int out[2];
  int err[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return result;
  if (::pipe2(err, O_CLOEXEC) != 0) {
    ::close(out[0]);
    ::close(out[1]);
    return result;
  }
  ChildSpawn spawn;
  spawn.program = argv[0];
  spawn.search_path = true;
  spawn.argv = argv;
  spawn.env = environment_with(extra_env);  // the extra variables win
  spawn.stdio = {-1, out[1], err[1]};
  spawn.own_process_group = true;
  const auto spawned = spawn_child(spawn);
  ::close(out[1]);
  ::close(err[1]);
  if (!spawned) {
    ::close(out[0]);
    ::close(err[0]);
    return result;
  }
  const pid_t pid = *spawned;
  result.started = true;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  std::string* texts[2] = {&result.out, &result.err};
  int open_fds = 2;
  while (open_fds > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      result.timed_out = true;
      break;
    }
    const int ready = ::poll(fds, 2, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      char buffer[4096];
      const ssize_t got = ::read(fds[i].fd, buffer, sizeof buffer);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
        continue;
      }
      auto& text = *texts[i];
      if (text.size() < max_output)
        text.append(buffer, std::min(static_cast<std::size_t>(got), max_output - text.size()));
    }
  }
  for (auto& p : fds)
    if (p.fd >= 0) ::close(p.fd);
  if (result.timed_out) ::kill(-pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.exit_code = shell_status(status);
  // 127: the shell convention for "not found", which posix_spawnp may give
  // through the child instead of an error.
  if (result.exit_code == 127 && result.out.empty() && result.err.empty()) result.started = false;
  return result;
}

}  // namespace dlaunch
