#include "launcher/output/rank_log_files.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/log.h"
#include "common/posix.h"

namespace dlaunch {
namespace {
// Written out once a rank has this much pending: large enough to batch a
// flood of short lines, small enough for thousands of ranks.
constexpr std::size_t kFileBuffer = 64 * 1024;
}  // namespace

std::size_t RankLogFiles::default_max_open() {
  return std::clamp<std::size_t>(descriptor_limit() / 4, 64, 65'536);
}

RankLogFiles::RankLogFiles(std::string job_dir, std::size_t max_open)
    : job_dir_(std::move(job_dir)), max_open_(max_open > 0 ? max_open : default_max_open()) {}

RankLogFiles::~RankLogFiles() {
  flush();
  for (auto& [rank, f] : files_) {
    if (f.fd >= 0) ::close(f.fd);
  }
}

std::string RankLogFiles::path_of(int rank) const {
  return job_dir_ + "/" + rank_log_name(rank, round_);
}

std::string rank_log_name(int rank, int round) {
  return "rank-" + std::to_string(rank) + (round > 0 ? "." + std::to_string(round) : "") + ".log";
}

RankLogFiles::File& RankLogFiles::file_for(int rank) {
  auto [it, created] = files_.try_emplace(rank);
  if (created && !job_dir_.empty()) it->second.path = path_of(rank);
  return it->second;
}

// Open (or keep open, as the most recently used), closing the least recently
// written file when max_open are open. False when the file cannot be opened;
// that is reported once and its bytes are counted as lost.
bool RankLogFiles::ensure_open(int rank, File& f) {
  if (f.fd >= 0) {
    open_.splice(open_.end(), open_, f.order);
    return true;
  }
  if (f.open_failed || f.path.empty()) return false;
  if (open_.size() >= max_open_) close_oldest();
  f.fd = ::open(f.path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (f.fd < 0) {
    f.open_failed = true;
    f.error = std::strerror(errno);
    log::warn("cannot write ", f.path, ": ", f.error, "; rank ", rank,
              "'s output goes to the terminal only");
    return false;
  }
  f.order = open_.insert(open_.end(), rank);
  return true;
}

void RankLogFiles::close_oldest() {
  File& f = files_.at(open_.front());
  write_out(f);
  ::close(f.fd);
  f.fd = -1;
  open_.pop_front();
}

void RankLogFiles::append(int rank, std::string_view bytes, std::string_view end) {
  File& f = file_for(rank);
  if (f.path.empty()) return;
  if (f.open_failed) {
    f.lost += bytes.size() + end.size();
    return;
  }
  f.pending.append(bytes);
  f.pending.append(end);
  if (f.pending.size() >= kFileBuffer) write_or_count(rank, f);
}

void RankLogFiles::start_round(int round) {
  flush();
  past_losses_ = losses();
  for (auto& [rank, f] : files_) {
    if (f.fd >= 0) ::close(f.fd);
  }
  files_.clear();
  open_.clear();
  round_ = round;
}

void RankLogFiles::flush() {
  for (auto& [rank, f] : files_) {
    if (!f.pending.empty()) write_or_count(rank, f);
  }
}

void RankLogFiles::write_or_count(int rank, File& f) {
  if (ensure_open(rank, f)) {
    write_out(f);
    return;
  }
  f.lost += f.pending.size();
  f.pending.clear();
}

void RankLogFiles::write_out(File& f) {
  std::size_t done = 0;
  while (done < f.pending.size() && f.fd >= 0) {
    const ssize_t n = ::write(f.fd, f.pending.data() + done, f.pending.size() - done);
    if (n > 0) {
      done += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    const int e = n < 0 ? errno : ENOSPC;
    if (f.error.empty()) {
      f.error = std::strerror(e);
      log::warn("cannot write ", f.path, ": ", f.error,
                "; the job goes on, and what does not fit is counted at the end");
    }
    // Try again later (space may be freed), but count what is lost now.
    f.lost += f.pending.size() - done;
    break;
  }
  f.pending.clear();
}

std::vector<std::string> RankLogFiles::losses() const {
  std::vector<std::string> out = past_losses_;
  for (const auto& [rank, f] : files_) {
    if (f.lost == 0) continue;
    out.push_back(f.path + ": " + std::to_string(f.lost) + " bytes not written (" + f.error + ")");
  }
  return out;
}

}  // namespace dlaunch
