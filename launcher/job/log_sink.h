// Where rank output ends up on the coordinator: each line once on the terminal
// with its rank (and host) prefix, raw into <job dir>/rank-<R>.log, and the last
// lines of each rank kept for the failure summary.
#pragma once

#include <cstdio>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/messages.h"

namespace dlaunch {

class LogSink {
 public:
  struct Settings {
    std::string job_dir;  // empty: no files
    bool host_in_prefix = false;
    std::set<int> ranks_filter;  // empty: all
    bool quiet = false;
    std::size_t tail_lines = 20;
  };

  explicit LogSink(Settings settings);
  ~LogSink();
  LogSink(const LogSink&) = delete;
  LogSink& operator=(const LogSink&) = delete;

  void line(int rank, const std::string& host, proto::Stream stream, std::string_view text);
  std::vector<std::string> tail(int rank) const;
  void flush();
  // Marks the start of a restart round in every open rank file.
  void mark_round(int round);

 private:
  std::FILE* file_for(int rank);

  Settings settings_;
  std::map<int, std::FILE*> files_;
  std::map<int, std::deque<std::string>> tails_;
};

}  // namespace dlaunch
