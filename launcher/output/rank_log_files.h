// The per-rank log files of a job, <job dir>/rank-<R>.log: every byte a rank
// wrote, in order, and nothing else. Each restart round has files of its own,
// rank-<R>.<N>.log for restart N, so that every file is exactly what one
// process wrote. Buffered per rank and written with write(2), so that a
// failed write is known exactly: the first failure of a file is reported once
// with its path and the reason, the job goes on, and the bytes that did not
// reach the file are counted for the end-of-job summary.
//
// At most `max_open` files are open at once (least recently written closed
// first, reopened with O_APPEND when written again): a job of 10,000 nodes
// with 8 ranks each has 80,000 of them, and node 0 needs its descriptors for
// the agents' connections. By default a quarter of the descriptor limit.
#pragma once

#include <cstdint>
#include <list>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace dlaunch {

// "rank-3.log" for the first run, "rank-3.2.log" for restart 2.
std::string rank_log_name(int rank, int round);

class RankLogFiles {
 public:
  explicit RankLogFiles(std::string job_dir,        // empty: no files
                        std::size_t max_open = 0);  // 0: default_max_open()
  // A quarter of this process's descriptor limit, 64 to 65,536.
  static std::size_t default_max_open();
  ~RankLogFiles();
  RankLogFiles(const RankLogFiles&) = delete;
  RankLogFiles& operator=(const RankLogFiles&) = delete;

  // `bytes` then `end` (a line's "\n", say), without joining them first.
  void append(int rank, std::string_view bytes, std::string_view end = {});
  // From now on, the files of restart round `round` (0: the first run).
  void start_round(int round);
  int round() const { return round_; }
  void flush();

  std::string path_of(int rank) const;
  // "rank-3.log: 1048576 bytes not written (No space left on device)", one per
  // file that lost anything.
  std::vector<std::string> losses() const;

 private:
  struct File {
    int fd = -1;  // -1: closed (or it could not be opened: see open_failed)
    bool open_failed = false;
    std::string path;
    std::string pending;
    std::uint64_t lost = 0;
    std::string error;               // the first failure's reason
    std::list<int>::iterator order;  // in open_, while open
  };
  File& file_for(int rank);
  bool ensure_open(int rank, File& file);
  void close_oldest();
  void write_out(File& file);
  void write_or_count(int rank, File& file);

  std::string job_dir_;
  std::size_t max_open_;
  int round_ = 0;
  std::vector<std::string> past_losses_;  // of earlier rounds' files
  std::map<int, File> files_;
  std::list<int> open_;  // ranks whose file is open, least recently written first
};

}  // namespace dlaunch
