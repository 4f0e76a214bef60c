// Runs a helper command and keeps what it printed: the agent's `python -c`
// for the host's facts, the container engine's version, image and sweep
// commands, git for --sync-git on both sides. The command runs in a process
// group of its own that is killed when it overruns its time, so a hung helper
// never holds its caller.
#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <string>
#include <vector>

namespace dlaunch {

struct CapturedOutput {
  bool started = false;    // false: not found or not runnable
  bool timed_out = false;  // killed after the timeout
  int exit_code = -1;      // as a shell reports it (128+N for signal N); -1 when not run
  std::string out;         // the first `max_output` bytes of stdout
  std::string err;         // and of stderr
  bool ok() const { return started && !timed_out && exit_code == 0; }
};

// What a helper that failed said, for an error line: its first 3 lines that
// begin "fatal:" or "error:", else its last 3 lines, of stderr (else of
// stdout); else its exit code.
std::string last_words(const CapturedOutput& run);

// argv[0] is looked up on PATH. stdin is /dev/null. The environment is this
// process's with `extra_env` on top.
CapturedOutput run_captured(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                            std::size_t max_output = 64 * 1024,
                            const std::map<std::string, std::string>& extra_env = {});

}  // namespace dlaunch
