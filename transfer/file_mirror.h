// The receiving side of FileChunks: writes them under a root so that the copy
// is byte-identical to the files they came from. The coordinator keeps
// --tensorboard-dir's files under <job dir>/tensorboard as they grow, and
// --checkpoint-dir's under <job dir>/checkpoint; a new node 0's agent receives
// the checkpoint into its own directory. Paths come from the other side and
// are checked: relative, no "..", "." or empty part (protocol/relative_path.h),
// so nothing is written outside the root. What one sender can make it hold is
// bounded: kMaxFiles files, each only ever grown from its end (no chunk past
// what came before: no sparse file of terabytes), and Options::max_bytes in all.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "common/result.h"
#include "protocol/messages.h"

namespace dlaunch {

class FileMirror {
 public:
  struct Options {
    // Each file appears whole or not at all: its bytes go to a hidden
    // ".NAME.dlaunch-part" beside it, renamed into place by the chunk marked
    // `complete`, so the copy always holds the last complete version (a
    // checkpoint). Otherwise bytes land in place as they come (event files).
    bool whole_files = false;
    std::string what = "TensorBoard";      // in messages: "the TensorBoard copy"
    std::string source = "rank 0's host";  // in messages: where the chunks came from
    // Directories 0700 and files 0600 (the coordinator's copies, in the job's
    // directory); otherwise 0777 and 0666 less the umask, as the ranks' own
    // files would be.
    bool private_files = true;
    // The bytes every file of the copy may take together (the coordinator
    // sets what its disk can spare); a chunk past it is refused.
    std::uint64_t max_bytes = std::numeric_limits<std::uint64_t>::max();
  };
  // Files followed, and refused paths remembered (DirectoryFollower's bound).
  static constexpr std::size_t kMaxFiles = 10'000;
  static constexpr std::string_view kPartSuffix = ".dlaunch-part";

  explicit FileMirror(std::string root) : FileMirror(std::move(root), Options{}) {}
  FileMirror(std::string root, Options options);

  // Writes one chunk. A failure is returned once per file (then that file is
  // skipped until it starts again), as one line naming the file and the reason.
  Result<void> write(const proto::FileChunk& chunk);
  const std::string& root() const { return root_; }

 private:
  Result<void> write_whole(const proto::FileChunk& chunk, const std::string& path);
  // Refuses the rest of `path` with `why`, said once; past kMaxFiles refused
  // paths, the rest go unsaid after one line that says so.
  Result<void> refuse(const std::string& path, std::string why);
  // Whether `chunk` keeps within the bounds; its growth of the copy when so.
  Result<std::uint64_t> check_bounds(const proto::FileChunk& chunk);
  bool make_parents(std::string_view relative);
  const char* write_file(const std::string& path, const proto::FileChunk& chunk) const;

  std::string root_;
  Options options_;
  std::set<std::string> failed_;
  std::set<std::string> partial_;               // whole_files: begun, not yet complete
  bool root_made_ = false;                      // the root and its parents exist
  std::map<std::string, std::uint64_t> sizes_;  // each file's end as written
  std::uint64_t total_ = 0;                     // the sizes together
  bool refusals_unsaid_ = false;                // past kMaxFiles refused paths
};

// A name the mirror writes while a file is incomplete (never a file to copy).
bool is_partial_file(std::string_view name);

}  // namespace dlaunch
