// The sending side of FileChunks: follows every regular file under a
// directory and hands out its new bytes as chunks, within a byte budget per
// call, so that a FileMirror on the other side keeps a byte-identical copy.
// A file that was replaced (another inode) or truncated (shorter than what was
// sent) is sent again whole, its first chunk marked `restart`; the chunk that
// reaches the size the file had when read is marked `complete`. Symbolic links
// are not followed; at most kMaxFiles files are followed; a mirror's partial
// files (".NAME.dlaunch-part") are never sent.
//
// Used by the agent of rank 0's host for --tensorboard-dir (bytes as they are
// written) and --checkpoint-dir (settled files only), and by the coordinator
// to carry its copy of the checkpoint to a new node 0.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "protocol/messages.h"

namespace dlaunch {

class DirectoryFollower {
 public:
  static constexpr std::size_t kMaxFiles = 10'000;
  static constexpr std::size_t kMaxDepth = 16;

  struct Options {
    std::size_t chunk_bytes = proto::kMaxFileChunk;
    proto::FileSet set = proto::FileSet::tensorboard;
    // Send a version of a file only once two scans in a row saw it the same
    // (inode, size, modification time) and it was last modified `settle`
    // ago, and skip "*.tmp": a checkpoint is copied when written, not while
    // it is being written.
    bool settled_only = false;
    std::chrono::milliseconds settle{1000};
  };

  explicit DirectoryFollower(std::string root) : DirectoryFollower(std::move(root), Options{}) {}
  DirectoryFollower(std::string root, Options options);

  // Scans the directory and returns chunks of new bytes, at most `budget`
  // bytes of data in all (a file's restart with no data costs nothing).
  std::vector<proto::FileChunk> next(std::size_t budget);
  // Whether the last next() left nothing unsent that it saw (a file not yet
  // settled counts as unsent).
  bool caught_up() const { return caught_up_; }
  // Bytes handed out so far.
  std::uint64_t bytes_sent() const { return bytes_sent_; }
  // The file as it is now is known to the other side already (it came from
  // there): it is not sent back unless it changes.
  void mark_sent(const std::string& relative);

 private:
  // One version of a file: what a change of any field makes new.
  struct Version {
    dev_t device = 0;
    ino_t inode = 0;
    std::uint64_t size = 0;
    std::int64_t mtime_ns = 0;
    bool operator==(const Version&) const = default;
  };
  struct Followed {
    Version sending;  // the version being sent (settled_only) or the inode followed
    Version seen;     // settled_only: what the last scan saw
    std::uint64_t sent = 0;
  };

  // A regular file under the root, as the scan's lstat saw it.
  struct Found {
    std::string relative;
    Version version;
  };

  void scan(const std::string& dir, const std::string& prefix, std::size_t depth,
            std::vector<Found>& found) const;
  // Whether the file as the scan saw it went out whole already: it is not
  // even opened (each tick scans every file while the job runs).
  bool unchanged_and_sent(const Found& file) const;
  void follow(const std::string& relative, std::size_t& budget, std::vector<proto::FileChunk>& out);

  std::string root_;
  Options options_;
  std::map<std::string, Followed> files_;
  bool caught_up_ = true;
  std::uint64_t bytes_sent_ = 0;
};

}  // namespace dlaunch
