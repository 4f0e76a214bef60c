// --tensorboard-dir on the agent of rank 0's host: follows every regular file
// under a directory and hands out its new bytes as FileChunks, within a byte
// budget per call, so the coordinator can keep a byte-identical copy. A file
// that was replaced (another inode) or truncated (shorter than what was sent)
// is sent again whole, its first chunk marked `restart`. Symbolic links are
// not followed; at most kMaxFiles files are followed.
#pragma once

#include <sys/types.h>

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

  explicit DirectoryFollower(std::string root, std::size_t chunk_bytes = proto::kMaxFileChunk);

  // Scans the directory and returns chunks of new bytes, at most `budget`
  // bytes of data in all (a file's restart with no data costs nothing).
  std::vector<proto::FileChunk> next(std::size_t budget);
  // Whether the last next() left nothing unsent that it saw.
  bool caught_up() const { return caught_up_; }
  // Bytes handed out so far.
  std::uint64_t bytes_sent() const { return bytes_sent_; }

 private:
  struct Followed {
    dev_t device = 0;
    ino_t inode = 0;
    std::uint64_t sent = 0;
  };

  void scan(const std::string& dir, const std::string& prefix, std::size_t depth,
            std::vector<std::string>& found) const;
  void follow(const std::string& relative, std::size_t& budget, std::vector<proto::FileChunk>& out);

  std::string root_;
  std::size_t chunk_bytes_;
  std::map<std::string, Followed> files_;
  bool caught_up_ = true;
  std::uint64_t bytes_sent_ = 0;
};

}  // namespace dlaunch
