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
  put(proto::Stream::out, {progress_line_.close()}, -1);
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
  RankOutput& out = output_of(rank);
  keep_in_tail(out, text);
  if (settings_.quiet) return;
  if (!settings_.filter.shows(rank, local_rank < 0 ? rank : local_rank, stream)) return;
  // Text without a newline is a display that moves (a "\r" progress bar, whose
  // text arrives as partial while it waits for its next "\r") or a prompt:
  // the latest of it is shown, at most once a second per rank.
  const bool moving = end == proto::LineEnd::carriage_return || end == proto::LineEnd::partial;
  if (!moving) {
    // A line supersedes the progress it follows (tqdm ends its bar with one).
    if (!progress_.empty()) {
      if (auto it = progress_.find(rank); it != progress_.end()) it->second.waiting = false;
    }
    show(out, rank, host, stream, text);
    return;
  }
  if (settings_.terminal_is_tty) {
    if (progress_line_.claims(rank)) {
      draw_in_place(out, rank, host, stream, text);
      return;
    }
    // A second rank draws progress: bars become lines for everyone.
    if (progress_line_.drawn()) put(stream, {progress_line_.close()}, -1);
  }
  auto& p = progress_[rank];
  const auto now = std::chrono::steady_clock::now();
  if (now - p.last_shown >= std::chrono::seconds(1)) {
    p.last_shown = now;
    p.waiting = false;
    show(out, rank, host, stream, text);
    return;
  }
  p.host = host;
  p.stream = stream;
  p.text.assign(text);
  p.waiting = true;
}

void LogSink::keep_in_tail(RankOutput& out, std::string_view text) {
  if (settings_.tail_lines == 0) return;
  if (out.tail.size() < settings_.tail_lines) {
    out.tail.emplace_back(text);
    return;
  }
  std::string& slot = out.tail[out.tail_next];
  out.tail_next = (out.tail_next + 1) % out.tail.size();
  // A slot that once held a long line gives its room back for a short one,
  // or every rank would keep tail_lines of its longest lines' worth.
  if (slot.capacity() > 1024 && text.size() < slot.capacity() / 4) {
    slot = std::string(text);
  } else {
    slot.assign(text);
  }
}

void LogSink::show_due_progress(bool all) {
  const auto now = std::chrono::steady_clock::now();
  for (auto& [rank, p] : progress_) {
    if (!p.waiting || (!all && now - p.last_shown < std::chrono::seconds(1))) continue;
    p.waiting = false;
    p.last_shown = now;
    show(output_of(rank), rank, p.host, p.stream, p.text);
  }
}

const std::string& LogSink::prefix(RankOutput& out, int rank, const std::string& host,
                                   proto::Stream stream) {
  if (!out.has_prefix || out.prefix_host != host) {
    const bool with_host = settings_.host_in_prefix && !host.empty();
    const std::string plain =
        "[" + (with_host ? host + ":" : std::string()) + std::to_string(rank) + "]";
    for (const auto s : {proto::Stream::out, proto::Stream::err}) {
      const bool color = s == proto::Stream::err ? settings_.color_err : settings_.color_out;
      std::string p = plain;
      if (with_host && color) {
        const auto index = host_index_.emplace(host, host_index_.size()).first->second;
        p = colored(p, index);
      }
      out.prefix[s == proto::Stream::err] = p + " ";
    }
    out.prefix_host = host;
    out.has_prefix = true;
  }
  return out.prefix[stream == proto::Stream::err];
}

void LogSink::show(RankOutput& out, int rank, const std::string& host, proto::Stream stream,
                   std::string_view text) {
  const std::string& before = prefix(out, rank, host, stream);
  if (!settings_.terminal_is_tty) {
    put(stream, {before, text, "\n"}, rank);
    return;
  }
  std::string line = before;
  line.append(text).append("\n");
  put(stream, {progress_line_.line(rank, line)}, rank);
}

void LogSink::draw_in_place(RankOutput& out, int rank, const std::string& host,
                            proto::Stream stream, std::string_view text) {
  std::string bar = prefix(out, rank, host, stream);
  bar.append(text);
  put(stream, {progress_line_.draw(bar)}, rank);
}

// To the terminal, unless it is too far behind (then counted as skipped for
// `rank`; rank -1 is never skipped).
void LogSink::put(proto::Stream stream, TerminalWriter::Parts bytes, int rank) {
  std::size_t size = 0;
  for (const auto part : bytes) size += part.size();
  if (size == 0) return;
  const auto where =
      stream == proto::Stream::err ? TerminalWriter::Stream::err : TerminalWriter::Stream::out;
  if (settings_.no_skip || rank < 0) {
    terminal_.write(where, bytes);
    return;
  }
  if (skipping_) note_skipped_if_caught_up();
  if (skipping_ || !terminal_.offer(where, bytes)) {
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
  auto it = ranks_.find(rank);
  if (it == ranks_.end()) return {};
  const RankOutput& out = it->second;
  std::vector<std::string> lines;
  lines.reserve(out.tail.size());
  for (std::size_t i = 0; i < out.tail.size(); ++i)
    lines.push_back(out.tail[(out.tail_next + i) % out.tail.size()]);
  return lines;
}

void LogSink::flush() {
  files_.flush();
  show_due_progress(false);
  note_skipped_if_caught_up();
}

void LogSink::mark_round(int round) {
  files_.start_round(round);
  for (auto& [rank, out] : ranks_) {
    out.tail.clear();
    out.tail_next = 0;
  }
}

}  // namespace dlaunch
