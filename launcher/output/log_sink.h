// Where rank output ends up on the coordinator: raw into <job dir>/rank-<R>.log
// (always complete), each line once on the terminal with its rank (and host)
// prefix, and the last lines of each rank kept for the failure summary.
//
// The terminal is written from a thread of its own through a bounded buffer,
// so a terminal that stops reading never blocks the coordinator. When it falls
// behind by more than the buffer, lines are skipped on the terminal only and
// one marker line says how many of which ranks (the log files hold them);
// with `no_skip` nothing is skipped and terminal_backlogged() tells the
// coordinator to hold the ranks back instead.
#pragma once

#include <chrono>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/terminal_writer.h"
#include "launcher/output/progress_line.h"
#include "launcher/output/rank_log_files.h"
#include "launcher/output/terminal_filter.h"
#include "protocol/messages.h"

namespace dlaunch {

// Whether the terminal may skip lines when it falls behind: not when stdout
// is a regular file (`> train.log`). A file falls behind only while the
// machine is short of CPU, and whoever redirected into it expects every line
// there; so there the ranks are held back, as --no-skip does (also while a
// stalled stderr holds the writer up). A terminal, a pipe or a socket can
// stall for good, and does skip.
bool terminal_may_skip(int out_fd);

class LogSink {
 public:
  struct Settings {
    std::string job_dir;  // empty: no files
    bool host_in_prefix = false;
    TerminalFilter filter = {};  // which lines the terminal shows
    bool quiet = false;
    std::size_t tail_lines = 20;
    bool no_skip = false;
    // stdout and stderr are the same terminal: one rank's progress bar may be
    // redrawn in place (see ProgressLine).
    bool terminal_is_tty = false;
    // Color the `[host:R]` prefix per host on stdout / stderr (only with
    // host_in_prefix). The caller decides: a terminal, and NO_COLOR unset.
    bool color_out = false;
    bool color_err = false;
    // Hosts in hosts-file order: host i gets color i. A host not listed gets
    // the next color when its first line arrives.
    std::vector<std::string> hosts{};
    TerminalWriter::Settings terminal{};
    // Rank log files open at once; 0: RankLogFiles' default.
    std::size_t max_open_rank_logs = 0;
  };

  explicit LogSink(Settings settings);
  ~LogSink();
  LogSink(const LogSink&) = delete;
  LogSink& operator=(const LogSink&) = delete;

  // One piece of a rank's output and how it ended. The rank's log gets the
  // bytes exactly; the terminal shows lines as they come, and text without a
  // newline ("\r" progress segments, a prompt) at most once a second per rank:
  // the latest one, which flush() shows once it has waited its second.
  // `local_rank` is the rank's LOCAL_RANK (-1: the same as `rank`, one node).
  void line(int rank, const std::string& host, proto::Stream stream, std::string_view text,
            proto::LineEnd end = proto::LineEnd::newline, int local_rank = -1);
  std::vector<std::string> tail(int rank) const;
  // Writes the rank files' buffers out; says so when skipped terminal lines
  // have been caught up with.
  void flush();
  // Restart round `round` begins: its output goes to files of its own
  // (rank-<R>.<round>.log), and the failure summary forgets the last round.
  void mark_round(int round);
  // The round whose files the ranks' output goes to.
  int round() const { return files_.round(); }

  bool terminal_backlogged() const { return terminal_.over_bound(); }
  // Nothing is skipped (no_skip): the coordinator holds the ranks back while
  // terminal_backlogged().
  bool holds_ranks_back() const { return settings_.no_skip; }
  TerminalWriter& terminal() { return terminal_; }
  // What the rank files lost to write errors, one line per file.
  std::vector<std::string> losses() const { return files_.losses(); }

 private:
  // What the sink keeps per rank, found with one lookup per line.
  struct RankOutput {
    // The last lines, a ring whose slots are reused: a flood of lines costs
    // no allocation per line here.
    std::vector<std::string> tail;
    std::size_t tail_next = 0;  // the oldest slot once the ring is full
    // "[host:R] " per stream (colors differ), made once per host.
    std::string prefix_host;
    std::string prefix[2];
    bool has_prefix = false;
  };
  RankOutput& output_of(int rank) { return ranks_[rank]; }
  void keep_in_tail(RankOutput& out, std::string_view text);
  const std::string& prefix(RankOutput& out, int rank, const std::string& host,
                            proto::Stream stream);
  void note_skipped_if_caught_up();
  void show(RankOutput& out, int rank, const std::string& host, proto::Stream stream,
            std::string_view text);
  void draw_in_place(RankOutput& out, int rank, const std::string& host, proto::Stream stream,
                     std::string_view text);
  void put(proto::Stream stream, TerminalWriter::Parts bytes, int rank);
  void show_due_progress(bool all);

  // The latest "\r" segment of a rank not yet shown, and when it may be.
  struct Progress {
    std::string host;
    proto::Stream stream = proto::Stream::out;
    std::string text;
    bool waiting = false;
    std::chrono::steady_clock::time_point last_shown{};
  };

  Settings settings_;
  RankLogFiles files_;
  TerminalWriter terminal_;
  std::unordered_map<int, RankOutput> ranks_;
  bool skipping_ = false;
  std::map<int, std::uint64_t> skipped_;  // rank -> lines skipped on the terminal
  std::map<int, Progress> progress_;
  ProgressLine progress_line_;
  std::map<std::string, std::size_t> host_index_;
};

}  // namespace dlaunch
