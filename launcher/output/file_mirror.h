// The coordinator's side of --tensorboard-dir: writes the FileChunks from rank
// 0's host under <job dir>/tensorboard/, so the copy is byte-identical to the
// files there. Paths come from an agent and are checked: relative, no "..",
// "." or empty part (protocol/relative_path.h), so nothing is written outside
// the mirror's root.
#pragma once

#include <optional>
#include <set>
#include <string>

#include "protocol/messages.h"

namespace dlaunch {

class FileMirror {
 public:
  explicit FileMirror(std::string root);

  // Writes one chunk. A failure is returned once per file (then that file is
  // skipped), as one line naming the file and the reason.
  std::optional<std::string> write(const proto::FileChunk& chunk);
  const std::string& root() const { return root_; }

 private:
  std::string root_;
  std::set<std::string> failed_;
};

}  // namespace dlaunch
