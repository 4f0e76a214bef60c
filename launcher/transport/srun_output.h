// What srun writes while the Slurm transport's step runs, taken apart again.
// Pure: bytes in, lines and exit codes out, so every shape is a unit test.
//
// With --label, srun puts "<task>: " before every line a task writes, the
// number right-aligned to the width of the highest task id (" 3: " among 12
// tasks). Lines without a label are srun's own ("srun: error: ..."). When a
// task ends badly srun says which, on its node, in one of these forms:
//
//   srun: error: n2: task 1: Exited with exit code 3
//   srun: error: n2: task 1: Killed                    (strsignal's text)
//   srun: error: n2: task 1: Segmentation fault (core dumped)
//
// A task that exits 0 gets no line.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dlaunch {

struct SrunLine {
  int task = -1;     // -1: srun's own line, not a task's
  std::string text;  // without the label, with its '\n' (none on a cut line)
};

// Splits srun's output into lines and each line into task and text. Bytes may
// arrive in any pieces; a line longer than kMaxLine is passed on in parts.
class SrunOutput {
 public:
  static constexpr std::size_t kMaxLine = 64 * 1024;
  explicit SrunOutput(int tasks) : tasks_(tasks) {}
  std::vector<SrunLine> feed(std::string_view bytes);
  // The unfinished last line, if any (srun has exited).
  std::vector<SrunLine> finish();

 private:
  SrunLine split(std::string_view line) const;
  int tasks_;
  std::string pending_;
};

struct TaskExit {
  std::string node;
  int task = 0;
  int exit_code = 0;  // 128+N for signal N, as a shell reports it
};

// One of srun's task-exit lines above; nullopt for any other line.
std::optional<TaskExit> parse_task_exit(std::string_view line);

// Which of `nodes` a task-exit line is about: the node it names, else the
// node at its task id (task i runs on the i-th node); nullopt for neither.
std::optional<std::size_t> node_of(const std::vector<std::string>& nodes, const TaskExit& exit);

// Each node's agent exit code once srun is gone: a node named by a task-exit
// line gets its code (matched by node name, else by task id), the others 0.
// With no such line and srun failing, every node gets srun's code: srun itself
// failed (no allocation, a bad node list) or was killed before the agents ran.
std::vector<int> agent_exit_codes(const std::vector<std::string>& nodes,
                                  const std::vector<TaskExit>& exits, int srun_code);

}  // namespace dlaunch
