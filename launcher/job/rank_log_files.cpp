#include "launcher/job/rank_log_files.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/log.h"

namespace dlaunch {
namespace {
// Written out once a rank has this much pending: large enough to batch a
// flood of short lines, small enough for thousands of ranks.
constexpr std::size_t kFileBuffer = 64 * 1024;
}  // namespace

RankLogFiles::RankLogFiles(std::string job_dir) : job_dir_(std::move(job_dir)) {}

RankLogFiles::~RankLogFiles() {
  flush();
  for (auto& [rank, f] : files_) {
    if (f.fd >= 0) ::close(f.fd);
  }
}

std::string RankLogFiles::path_of(int rank) const {
  return job_dir_ + "/rank-" + std::to_string(rank) + ".log";
}

RankLogFiles::File& RankLogFiles::file_for(int rank) {
  auto it = files_.find(rank);
  if (it != files_.end()) return it->second;
  File& f = files_[rank];
  if (job_dir_.empty()) return f;
  f.path = path_of(rank);
  f.fd = ::open(f.path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (f.fd < 0) {
    f.error = std::strerror(errno);
    log::warn("cannot write ", f.path, ": ", f.error, "; rank ", rank,
              "'s output goes to the terminal only");
  }
  return f;
}

void RankLogFiles::append(int rank, std::string_view bytes, std::string_view end) {
  File& f = file_for(rank);
  if (f.path.empty()) return;
  if (f.fd < 0) {
    f.lost += bytes.size() + end.size();
    return;
  }
  f.pending.append(bytes);
  f.pending.append(end);
  if (f.pending.size() >= kFileBuffer) write_out(f);
}

void RankLogFiles::append_all(std::string_view bytes) {
  for (auto& [rank, f] : files_) {
    if (f.fd >= 0) f.pending.append(bytes);
  }
}

void RankLogFiles::flush() {
  for (auto& [rank, f] : files_) write_out(f);
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
  std::vector<std::string> out;
  for (const auto& [rank, f] : files_) {
    if (f.lost == 0) continue;
    out.push_back(f.path + ": " + std::to_string(f.lost) + " bytes not written (" + f.error + ")");
  }
  return out;
}

}  // namespace dlaunch
