// Python programs as torchrun runs them: a program ending in ".py", or any
// program with -m/--module, runs as `PYTHON -u PROGRAM ARGS` (`PYTHON -u -m
// MODULE ARGS`), so that `dlaunch train.py` works where `torchrun train.py`
// does, with unbuffered output as torchrun's workers have. --no-python runs
// the program as it is. PYTHON is --python, else $DLAUNCH_PYTHON, else
// "python3": the first one on each rank's PATH on its host.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/result.h"

namespace dlaunch {

struct PythonChoice {
  bool module = false;                         // -m/--module
  bool no_python = false;                      // --no-python
  bool run_path = false;                       // torchrun's --run-path: Python, .py or not
  std::string python = {};                     // --python; empty: not given
  std::optional<std::string> python_env = {};  // $DLAUNCH_PYTHON
};

// The one precedence for which Python runs a Python program on a host:
// --python (`flag`), else the host's `python` key, else $DLAUNCH_PYTHON, else
// python3 (the first on the PATH of the ranks there). Empty means not given.
struct PythonFor {
  std::string path;
  std::string by;  // "--python", "hosts file", "DLAUNCH_PYTHON", "PATH"
};
PythonFor choose_python(const std::string& flag, const std::string& host_key,
                        const std::string& env);

// The script or module a command made by python_command runs (the word after
// PYTHON -u, or after -m).
const std::string& python_target(const std::vector<std::string>& command);

// The command each rank runs; an error names the flags that conflict.
Result<std::vector<std::string>> python_command(std::vector<std::string> command,
                                                const PythonChoice& choice);

}  // namespace dlaunch
