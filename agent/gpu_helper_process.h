// The agent's GPU helper (agent/gpu_helper/) as a child process. The agent is
// static and cannot load the host's GPU libraries itself; it carries the
// helper's executable as bytes, writes it out when needed (a memfd, else a
// file beside the agent or in TMPDIR, removed once started), and speaks to it
// in tab-separated lines over its stdin and stdout.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dlaunch {

class GpuHelperProcess {
 public:
  // Starts `dlaunch-gpu-helper MODE`, with `extra_env` ("NAME=value") added to
  // this process's environment where it does not set them already. nullptr,
  // with `error` saying why, when it cannot start.
  static std::unique_ptr<GpuHelperProcess> start(const std::string& mode,
                                                 const std::vector<std::string>& extra_env,
                                                 std::string& error);
  ~GpuHelperProcess();  // closes its input, kills it if it still runs, reaps it
  GpuHelperProcess(const GpuHelperProcess&) = delete;
  GpuHelperProcess& operator=(const GpuHelperProcess&) = delete;

  bool write_line(std::string_view line);
  // The next line it writes, without the newline; nullopt once its output
  // ends, or when `timeout` (if given) passes first.
  std::optional<std::string> read_line(std::optional<std::chrono::milliseconds> timeout);

 private:
  GpuHelperProcess(pid_t pid, int input, int output) : pid_(pid), input_(input), output_(output) {}

  pid_t pid_;
  int input_;
  int output_;
  std::string pending_;
};

// "key\tone\ttwo" -> {"key", "one", "two"}.
std::vector<std::string> split_helper_line(std::string_view line);

// The helper's bytes as this agent carries them.
std::string_view gpu_helper_image();

}  // namespace dlaunch
