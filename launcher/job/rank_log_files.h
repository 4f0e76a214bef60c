// The per-rank log files of a job, <job dir>/rank-<R>.log: every byte a rank
// wrote, in order. Buffered per rank and written with write(2), so that a
// failed write is known exactly: the first failure of a file is reported once
// with its path and the reason, the job goes on, and the bytes that did not
// reach the file are counted for the end-of-job summary.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace dlaunch {

class RankLogFiles {
 public:
  explicit RankLogFiles(std::string job_dir);  // empty: no files
  ~RankLogFiles();
  RankLogFiles(const RankLogFiles&) = delete;
  RankLogFiles& operator=(const RankLogFiles&) = delete;

  // `bytes` then `end` (a line's "\n", say), without joining them first.
  void append(int rank, std::string_view bytes, std::string_view end = {});
  // To every file already open (restart markers).
  void append_all(std::string_view bytes);
  void flush();

  std::string path_of(int rank) const;
  // "rank-3.log: 1048576 bytes not written (No space left on device)", one per
  // file that lost anything.
  std::vector<std::string> losses() const;

 private:
  struct File {
    int fd = -1;
    std::string path;
    std::string pending;
    std::uint64_t lost = 0;
    std::string error;  // the first failure's reason
  };
  File& file_for(int rank);
  void write_out(File& file);

  std::string job_dir_;
  std::map<int, File> files_;
};

}  // namespace dlaunch
