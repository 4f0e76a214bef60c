// `--detach`: the coordinator leaves the terminal. dlaunch forks before any
// thread exists; the child becomes the coordinator in a session of its own
// (no controlling terminal, stdin from /dev/null), and the parent waits only
// until the child has taken the job's name and written its PENDING record,
// then prints the name and exits 0, or exits with the child's error code. The
// child's own messages go to <job dir>/coordinator.log from then on.
#pragma once

#include <optional>
#include <string>

namespace dlaunch {

class Detacher {
 public:
  // Forks. In the parent, waits for the child's report and returns the exit
  // code for the parent to return; in the child, returns nothing.
  std::optional<int> fork_coordinator();

  // Child: the job is PENDING. Moves stdout to /dev/null and stderr to
  // `log_path`, then lets the parent print `job` and go.
  void started(const std::string& job, const std::string& log_path);
  // Child: the job did not start; its error went to the terminal's stderr,
  // which the parent passes on by exiting with `code`.
  void failed(int code);

 private:
  int report_fd_ = -1;
};

}  // namespace dlaunch
