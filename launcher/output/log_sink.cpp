#include "launcher/output/log_sink.h"

#include <sys/stat.h>

#include "common/console.h"
#include "common/host_color.h"

namespace dlaunch {
namespace {

std::string rank_list(const std::map<int, std::uint64_t>& ranks) {
  std::string out;
  for (const auto& [rank, n] : ranks) out += (out.empty() ? "" : ", ") + std::to_string(rank);
  return out;
}

}  // namespace

bool terminal_may_skip(int out_fd) {
  const auto regular_file = [](int fd) {
    struct stat st {};
    return ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  };
  return !regular_file(out_fd);
}

LogSink::LogSink(Settings settings)
    : settings_(std::move(settings)),
      files_(settings_.job_dir, settings_.max_open_rank_logs),
      terminal_(settings_.terminal) {
  for (const auto& host : settings_.hosts) host_index_.emplace(host, host_index_.size());
  console().attach(&terminal_);
}

LogSink::~LogSink() {
  show_due_progress(true);  // the final state of every bar
  put(proto::Stream::out, progress_line_.close(), -1);
  if (skipping_) {
    terminal_.drain();
    note_skipped_if_caught_up();
  }
  console().attach(nullptr);
  files_.flush();
  // terminal_ drains in its destructor.
}

void LogSink::line(int rank, const std::string& host, proto::Stream stream, std::string_view text,
                   proto::LineEnd end, int local_rank) {
  files_.append(rank, text,
                end == proto::LineEnd::newline           ? "\n"
                : end == proto::LineEnd::carriage_return ? "\r"
                                                         : "");
  // The empty segment before a bar's first "\r" shows nothing.
  if (text.empty() && end != proto::LineEnd::newline) return;
  auto& tail = tails_[rank];
  tail.emplace_back(text);
  if (tail.size() > settings_.tail_lines) tail.pop_front();
  if (settings_.quiet) return;
  if (!settings_.filter.shows(rank, local_rank < 0 ? rank : local_rank, stream)) return;
  // Text without a newline is a display that moves (a "\r" progress bar, whose
  // text arrives as partial while it waits for its next "\r") or a prompt:
  // the latest of it is shown, at most once a second per rank.
  const bool moving = end == proto::LineEnd::carriage_return || end == proto::LineEnd::partial;
  if (!moving) {
    // A line supersedes the progress it follows (tqdm ends its bar with one).
    if (auto it = progress_.find(rank); it != progress_.end()) it->second.waiting = false;
    show(rank, host, stream, text);
    return;
  }
  if (settings_.terminal_is_tty) {
    if (progress_line_.claims(rank)) {
      draw_in_place(rank, host, stream, text);
      return;
    }
    // A second rank draws progress: bars become lines for everyone.
    if (progress_line_.drawn()) put(stream, progress_line_.close(), -1);
  }
  auto& p = progress_[rank];
  const auto now = std::chrono::steady_clock::now();
  if (now - p.last_shown >= std::chrono::seconds(1)) {
    p.last_shown = now;
    p.waiting = false;
    show(rank, host, stream, text);
    return;
  }
  p.host = host;
  p.stream = stream;
  p.text.assign(text);
  p.waiting = true;
}

void LogSink::show_due_progress(bool all) {
  const auto now = std::chrono::steady_clock::now();
  for (auto& [rank, p] : progress_) {
    if (!p.waiting || (!all && now - p.last_shown < std::chrono::seconds(1))) continue;
    p.waiting = false;
    p.last_shown = now;
    show(rank, p.host, p.stream, p.text);
  }
}

std::string LogSink::prefixed(int rank, const std::string& host, proto::Stream stream,
                              std::string_view text) {
  const bool with_host = settings_.host_in_prefix && !host.empty();
  std::string prefix = "[";
  if (with_host) prefix += host + ":";
  prefix += std::to_string(rank) + "]";
  const bool color = stream == proto::Stream::err ? settings_.color_err : settings_.color_out;
  if (with_host && color) {
    const auto index = host_index_.emplace(host, host_index_.size()).first->second;
    prefix = colored(prefix, index);
  }
  return prefix + " " + std::string(text);
}

void LogSink::show(int rank, const std::string& host, proto::Stream stream, std::string_view text) {
  std::string line = prefixed(rank, host, stream, text) + "\n";
  if (settings_.terminal_is_tty) line = progress_line_.line(rank, line);
  put(stream, std::move(line), rank);
}

void LogSink::draw_in_place(int rank, const std::string& host, proto::Stream stream,
                            std::string_view text) {
  put(stream, progress_line_.draw(prefixed(rank, host, stream, text)), rank);
}

// To the terminal, unless it is too far behind (then counted as skipped for
// `rank`; rank -1 is never skipped).
void LogSink::put(proto::Stream stream, std::string bytes, int rank) {
  if (bytes.empty()) return;
  const auto where =
      stream == proto::Stream::err ? TerminalWriter::Stream::err : TerminalWriter::Stream::out;
  if (settings_.no_skip || rank < 0) {
    terminal_.write(where, std::move(bytes));
    return;
  }
  if (skipping_) note_skipped_if_caught_up();
  if (skipping_ || !terminal_.offer(where, std::move(bytes))) {
    skipping_ = true;
    ++skipped_[rank];
  }
}

void LogSink::note_skipped_if_caught_up() {
  if (!skipping_ || terminal_.buffered() > terminal_.max_buffered() / 2) return;
  skipping_ = false;
  std::uint64_t total = 0;
  for (const auto& [rank, n] : skipped_) total += n;
  std::string where = settings_.job_dir.empty() ? std::string("the rank log files")
                                                : settings_.job_dir + "/rank-<R>.log";
  console().note("the terminal fell behind: skipped " + std::to_string(total) + " line" +
                 (total == 1 ? "" : "s") + " of rank" + (skipped_.size() == 1 ? " " : "s ") +
                 rank_list(skipped_) + " here; every line is in " + where);
  skipped_.clear();
}

std::vector<std::string> LogSink::tail(int rank) const {
  auto it = tails_.find(rank);
  if (it == tails_.end()) return {};
  return {it->second.begin(), it->second.end()};
}

void LogSink::flush() {
  files_.flush();
  show_due_progress(false);
  note_skipped_if_caught_up();
}

void LogSink::mark_round(int round) {
  files_.start_round(round);
  for (auto& [rank, tail] : tails_) tail.clear();
}

}  // namespace dlaunch
