// Runs a short helper command and keeps what it printed: `python -c` for the
// host's facts, the container engine's version, image and sweep commands.
// The command runs in a process group of its own that is killed when it
// overruns its time, so a hung helper never holds the agent.
#pragma once

#include <chrono>
#include <cstddef>
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

// argv[0] is looked up on PATH. stdin is /dev/null.
CapturedOutput run_captured(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                            std::size_t max_output = 64 * 1024);

}  // namespace dlaunch
