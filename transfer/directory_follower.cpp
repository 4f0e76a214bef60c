#include "transfer/directory_follower.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "common/posix.h"
#include "transfer/file_mirror.h"

namespace dlaunch {

DirectoryFollower::DirectoryFollower(std::string root, Options options)
    : root_(std::move(root)), options_(options) {
  options_.chunk_bytes = std::max<std::size_t>(1, options_.chunk_bytes);
}

void DirectoryFollower::scan(const std::string& dir, const std::string& prefix, std::size_t depth,
                             std::vector<Found>& found) const {
  DIR* d = ::opendir(dir.c_str());
  if (!d) return;  // not there yet: the trainer has not created it
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == ".." || is_partial_file(name)) continue;
    if (options_.settled_only && name.ends_with(".tmp")) continue;
    if (found.size() >= kMaxFiles) break;
    struct stat st {};
    const std::string path = dir + "/" + name;
    if (::lstat(path.c_str(), &st) != 0) continue;
    if (S_ISDIR(st.st_mode) && depth < kMaxDepth) {
      scan(path, prefix + name + "/", depth + 1, found);
    } else if (S_ISREG(st.st_mode)) {
      found.push_back(Found{
          prefix + name,
          Version{st.st_dev, st.st_ino, static_cast<std::uint64_t>(st.st_size), mtime_ns(st)}});
    }
  }
  ::closedir(d);
}

void DirectoryFollower::mark_sent(const std::string& relative) {
  struct stat st {};
  const std::string path = root_ + "/" + relative;
  if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return;
  const Version now{st.st_dev, st.st_ino, static_cast<std::uint64_t>(st.st_size), mtime_ns(st)};
  files_[relative] = Followed{now, now, now.size};
}

bool DirectoryFollower::unchanged_and_sent(const Found& file) const {
  auto it = files_.find(file.relative);
  if (it == files_.end()) return false;
  const Followed& f = it->second;
  const Version& now = file.version;
  const bool same = options_.settled_only
                        ? f.sending == now && f.seen == now
                        : f.sending.device == now.device && f.sending.inode == now.inode;
  return same && f.sent == now.size;
}

void DirectoryFollower::follow(const std::string& relative, std::size_t& budget,
                               std::vector<proto::FileChunk>& out) {
  const std::string path = root_ + "/" + relative;
  // O_NONBLOCK: a FIFO put in the place of a file since the scan must not hang us.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) return;  // gone since the scan
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return;
  }
  const Version now{st.st_dev, st.st_ino, static_cast<std::uint64_t>(st.st_size), mtime_ns(st)};
  auto [it, is_new] = files_.try_emplace(relative);
  Followed& f = it->second;
  bool restart = false;
  if (options_.settled_only) {
    const auto age = std::chrono::system_clock::now().time_since_epoch() -
                     std::chrono::nanoseconds(now.mtime_ns);
    const bool settled = !is_new && f.seen == now && age >= options_.settle;
    f.seen = now;
    if (f.sending == now && f.sent >= now.size && !is_new) {
      ::close(fd);
      return;  // this version went out whole
    }
    if (!settled) {
      caught_up_ = false;  // changed since the last scan: wait for it to settle
      ::close(fd);
      return;
    }
    restart = is_new || f.sending != now;
  } else {
    restart = is_new || f.sending.device != now.device || f.sending.inode != now.inode ||
              now.size < f.sent;
  }
  if (restart) {
    f.sending = now;
    f.sent = 0;
    // The copy is created (or emptied) even before it has bytes.
    out.push_back(proto::FileChunk{relative, 0, true, {}, options_.set, now.size == 0});
  }
  while (f.sent < now.size) {
    if (budget == 0) {
      caught_up_ = false;
      break;
    }
    const std::size_t want = static_cast<std::size_t>(
        std::min<std::uint64_t>({now.size - f.sent, options_.chunk_bytes, budget}));
    std::string data(want, '\0');
    const ssize_t n = ::pread(fd, data.data(), want, static_cast<off_t>(f.sent));
    if (n <= 0) break;  // truncated under us: the next scan restarts it
    data.resize(static_cast<std::size_t>(n));
    const bool complete = f.sent + static_cast<std::uint64_t>(n) >= now.size;
    if (restart && !out.empty() && out.back().path == relative && out.back().data.empty()) {
      out.back().data = std::move(data);  // the restart carries the first bytes
      out.back().complete = complete;
    } else {
      out.push_back(
          proto::FileChunk{relative, f.sent, false, std::move(data), options_.set, complete});
    }
    restart = false;
    f.sent += static_cast<std::uint64_t>(n);
    bytes_sent_ += static_cast<std::uint64_t>(n);
    budget -= static_cast<std::size_t>(n);
  }
  ::close(fd);
}

std::vector<proto::FileChunk> DirectoryFollower::next(std::size_t budget) {
  std::vector<Found> found;
  scan(root_, "", 0, found);
  std::sort(found.begin(), found.end(),
            [](const Found& a, const Found& b) { return a.relative < b.relative; });
  caught_up_ = true;
  std::vector<proto::FileChunk> out;
  for (const auto& file : found) {
    if (!unchanged_and_sent(file)) follow(file.relative, budget, out);
  }
  return out;
}

}  // namespace dlaunch
