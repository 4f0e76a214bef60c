#include "launcher/job/log_sink.h"

#include <fcntl.h>
#include <unistd.h>

#include "common/log.h"

namespace dlaunch {

LogSink::LogSink(Settings settings) : settings_(std::move(settings)) {}

LogSink::~LogSink() {
  for (auto& [rank, f] : files_) {
    if (f) std::fclose(f);
  }
}

std::FILE* LogSink::file_for(int rank) {
  auto it = files_.find(rank);
  if (it != files_.end()) return it->second;
  std::FILE* f = nullptr;
  if (!settings_.job_dir.empty()) {
    const std::string path = settings_.job_dir + "/rank-" + std::to_string(rank) + ".log";
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd >= 0) f = ::fdopen(fd, "a");
    if (!f)
      log::warn("cannot write ", path, "; rank ", rank, "'s output goes to the terminal only");
  }
  files_[rank] = f;
  return f;
}

void LogSink::line(int rank, const std::string& host, proto::Stream stream, std::string_view text) {
  if (std::FILE* f = file_for(rank)) {
    std::fwrite(text.data(), 1, text.size(), f);
    std::fputc('\n', f);
  }
  auto& tail = tails_[rank];
  tail.emplace_back(text);
  if (tail.size() > settings_.tail_lines) tail.pop_front();
  if (settings_.quiet) return;
  if (!settings_.ranks_filter.empty() && !settings_.ranks_filter.contains(rank)) return;
  std::FILE* out = stream == proto::Stream::err ? stderr : stdout;
  std::string prefix = "[";
  if (settings_.host_in_prefix && !host.empty()) prefix += host + ":";
  prefix += std::to_string(rank) + "] ";
  std::fwrite(prefix.data(), 1, prefix.size(), out);
  std::fwrite(text.data(), 1, text.size(), out);
  std::fputc('\n', out);
  // One line is the unit of interleaving between ranks: flush each so that
  // stdout and stderr lines stay in arrival order on a terminal or pipe.
  std::fflush(out);
}

std::vector<std::string> LogSink::tail(int rank) const {
  auto it = tails_.find(rank);
  if (it == tails_.end()) return {};
  return {it->second.begin(), it->second.end()};
}

void LogSink::flush() {
  for (auto& [rank, f] : files_) {
    if (f) std::fflush(f);
  }
}

void LogSink::mark_round(int round) {
  for (auto& [rank, f] : files_) {
    if (f) std::fprintf(f, "--- dlaunch: restart %d ---\n", round);
  }
  for (auto& [rank, tail] : tails_) tail.clear();
}

}  // namespace dlaunch
