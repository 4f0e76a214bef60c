#include "agent/sync_receiver.h"

#include "agent/sync_markers.h"
#include "common/posix.h"
#include "protocol/auth.h"
#include "protocol/relative_path.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace dlaunch {
namespace {

std::string errno_text() {
  return std::strerror(errno);
}

// Agents of several hosts may write into one shared directory (an NFS home,
// or two hosts on one machine): the pid alone could repeat across machines.
const std::string& receiver_tag() {
  static const std::string tag =
      std::to_string(::getpid()) + "-" + auth::to_hex(auth::random_bytes(4));
  return tag;
}

std::string temp_name_for(std::uint32_t index) {
  return std::string(kSyncFilePrefix) + receiver_tag() + "-" + std::to_string(index) + ".tmp";
}

}  // namespace

SyncReceiver::SyncReceiver(const std::string& dest, bool trust_sizes)
    : dest_(dest), trust_sizes_(trust_sizes) {
  dest_fd_ = ::open(dest.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dest_fd_ < 0) fail(dest, errno_text());
}

SyncReceiver::~SyncReceiver() {
  if (hash_fd_ >= 0) ::close(hash_fd_);
  if (temp_fd_ >= 0) {
    ::close(temp_fd_);
    ::unlinkat(temp_parent_, temp_name_.c_str(), 0);
  }
  if (temp_parent_ >= 0) ::close(temp_parent_);
  if (dest_fd_ >= 0) ::close(dest_fd_);
}

bool SyncReceiver::fail(const std::string& path, const std::string& why) {
  if (error_.empty()) error_ = (path.empty() ? dest_ : path) + ": " + why;
  return false;
}

int SyncReceiver::open_parent(const std::string& path, std::string* leaf) {
  int fd = ::dup(dest_fd_);
  std::size_t start = 0;
  for (;;) {
    const auto slash = path.find('/', start);
    if (slash == std::string::npos) {
      *leaf = path.substr(start);
      return fd;
    }
    const std::string part = path.substr(start, slash - start);
    const int next = ::openat(fd, part.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    const int saved = errno;
    ::close(fd);
    if (next < 0) {
      fail(path.substr(0, slash), saved == ELOOP || saved == ENOTDIR
                                      ? "is a symbolic link or not a directory here; refused"
                                      : std::strerror(saved));
      return -1;
    }
    fd = next;
    start = slash + 1;
  }
}

bool SyncReceiver::on_offer(proto::SyncOffer&& offer) {
  if (failed()) return false;
  if (offer_complete_) return fail("", "an offer after the last one");
  if (offer.first != entries_.size()) return fail("", "an offer batch out of order");
  if (offer.first == 0) {
    delete_extra_ = offer.delete_extra;
    rules_ = IgnoreRules::from_lines(offer.ignore);
  }
  if (entries_.size() + offer.entries.size() > proto::kMaxSyncEntries)
    return fail("", "the offer has too many entries");
  for (auto& e : offer.entries) {
    if (!safe_relative_path(e.path)) return fail(e.path, "not a safe relative path; refused");
    entries_.push_back(std::move(e));
  }
  offer_complete_ = offer.last;
  return true;
}

bool SyncReceiver::clear_way(int parent, const std::string& leaf, const std::string& path) {
  struct stat st {};
  if (::fstatat(parent, leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return true;
    return fail(path, errno_text());
  }
  // ENOENT: another host sharing this directory removed it first.
  if (!S_ISDIR(st.st_mode)) {
    if (::unlinkat(parent, leaf.c_str(), 0) != 0 && errno != ENOENT)
      return fail(path, errno_text());
    return true;
  }
  if (::unlinkat(parent, leaf.c_str(), AT_REMOVEDIR) == 0 || errno == ENOENT) return true;
  if (!delete_extra_)
    return fail(path, "a non-empty directory is in the way; --sync-delete replaces it");
  if (!remove_tree(parent, leaf)) return fail(path, "cannot remove the directory in the way");
  return true;
}

bool SyncReceiver::clear_dir_in_way(int parent, const std::string& leaf, const std::string& path) {
  struct stat st {};
  if (::fstatat(parent, leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode))
    return clear_way(parent, leaf, path);
  return true;
}

bool SyncReceiver::place_dir(const proto::SyncEntry& e) {
  std::string leaf;
  const int parent = open_parent(e.path, &leaf);
  if (parent < 0) return false;
  struct stat st {};
  bool ok = true;
  if (::fstatat(parent, leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode)) {
    // Kept; its mode is set at the end.
  } else if (!clear_way(parent, leaf, e.path)) {
    ok = false;
  } else if (::mkdirat(parent, leaf.c_str(), (e.mode | 0700) & 07777) != 0) {
    // Another host sharing this directory made it at the same moment.
    const bool made_by_other = errno == EEXIST &&
                               ::fstatat(parent, leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                               S_ISDIR(st.st_mode);
    if (!made_by_other) ok = fail(e.path, errno_text());
  }
  ::close(parent);
  return ok;
}

bool SyncReceiver::place_symlink(std::uint32_t index, const proto::SyncEntry& e) {
  std::string leaf;
  const int parent = open_parent(e.path, &leaf);
  if (parent < 0) return false;
  struct stat st {};
  bool ok = true;
  if (::fstatat(parent, leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode)) {
    std::string target(proto::kMaxLinkTarget + 1, '\0');
    const ssize_t n = ::readlinkat(parent, leaf.c_str(), target.data(), target.size());
    if (n >= 0 && std::string_view(target.data(), static_cast<std::size_t>(n)) == e.target) {
      ::close(parent);
      return true;
    }
  }
  const std::string temp = temp_name_for(index);
  ::unlinkat(parent, temp.c_str(), 0);
  if (::symlinkat(e.target.c_str(), parent, temp.c_str()) != 0) {
    ok = fail(e.path, errno_text());
  } else if (!clear_dir_in_way(parent, leaf, e.path)) {
    ::unlinkat(parent, temp.c_str(), 0);
    ok = false;
  } else if (::renameat(parent, temp.c_str(), parent, leaf.c_str()) != 0) {
    ok = fail(e.path, errno_text());
    ::unlinkat(parent, temp.c_str(), 0);
  } else {
    ++done_.files_written;
  }
  ::close(parent);
  return ok;
}

bool SyncReceiver::compare_step(std::size_t budget, bool* done) {
  *done = false;
  if (failed()) return false;
  if (!offer_complete_) return fail("", "compared before the whole offer arrived");
  std::size_t spent = 0;
  char buffer[64 * 1024];
  while (compare_next_ < entries_.size()) {
    const auto index = static_cast<std::uint32_t>(compare_next_);
    const auto& e = entries_[compare_next_];
    if (hash_fd_ >= 0) {
      // Continue hashing the existing file.
      const ssize_t n = ::read(hash_fd_, buffer, sizeof buffer);
      if (n < 0 && errno == EINTR) continue;
      if (n > 0) {
        hash_.update(std::string_view(buffer, static_cast<std::size_t>(n)));
        spent += static_cast<std::size_t>(n);
        if (spent >= budget) return true;
        continue;
      }
      ::close(hash_fd_);
      hash_fd_ = -1;
      const std::string digest = hash_.finish();
      if (n < 0 || digest != e.sha256) {
        wanted_.push_back(index);
      } else {
        // Same content: only the mode may differ.
        std::string leaf;
        const int parent = open_parent(e.path, &leaf);
        if (parent < 0) return false;
        struct stat st {};
        if (::fstatat(parent, leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
            (st.st_mode & 07777) != e.mode && ::fchmodat(parent, leaf.c_str(), e.mode, 0) != 0) {
          ::close(parent);
          return fail(e.path, errno_text());
        }
        ::close(parent);
      }
      ++compare_next_;
      continue;
    }
    switch (e.kind) {
      case proto::SyncKind::dir:
        if (!place_dir(e)) return false;
        break;
      case proto::SyncKind::symlink:
        if (!place_symlink(index, e)) return false;
        break;
      case proto::SyncKind::file: {
        std::string leaf;
        const int parent = open_parent(e.path, &leaf);
        if (parent < 0) return false;
        struct stat st {};
        if (::fstatat(parent, leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
            static_cast<std::uint64_t>(st.st_size) == e.size) {
          if (trust_sizes_) {
            ::close(parent);
            break;
          }
          hash_fd_ = ::openat(parent, leaf.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        }
        ::close(parent);
        if (hash_fd_ >= 0) continue;  // hashed above, this entry again
        wanted_.push_back(index);
        break;
      }
    }
    ++compare_next_;
    ++spent;  // entries cost too, so a tree of many small files yields as well
    if (spent >= budget) return true;
  }
  compared_ = true;
  *done = true;
  return true;
}

std::vector<proto::SyncWant> SyncReceiver::take_wants() {
  std::vector<proto::SyncWant> out;
  if (!compared_ || wants_taken_) return out;
  wants_taken_ = true;
  for (std::size_t i = 0; i < wanted_.size(); i += proto::kMaxSyncWant) {
    const auto end = std::min(wanted_.size(), i + proto::kMaxSyncWant);
    proto::SyncWant want;
    want.indices.assign(wanted_.begin() + static_cast<std::ptrdiff_t>(i),
                        wanted_.begin() + static_cast<std::ptrdiff_t>(end));
    out.push_back(std::move(want));
  }
  if (out.empty()) out.emplace_back();
  out.back().last = true;
  return out;
}

bool SyncReceiver::close_temp() {
  if (temp_fd_ >= 0) ::close(temp_fd_);
  if (temp_parent_ >= 0) ::close(temp_parent_);
  temp_fd_ = -1;
  temp_parent_ = -1;
  return true;
}

bool SyncReceiver::on_data(const proto::SyncData& data) {
  if (failed()) return false;
  if (!compared_ || next_want_ >= wanted_.size() || data.index != wanted_[next_want_])
    return fail("",
                "data for entry " + std::to_string(data.index) + ", which was not asked for now");
  const auto& e = entries_[data.index];
  if (data.offset != written_ || written_ + data.data.size() > e.size)
    return fail(e.path, "data out of order or past the file's size");
  if (temp_fd_ < 0) {
    temp_parent_ = open_parent(e.path, &temp_leaf_);
    if (temp_parent_ < 0) return false;
    temp_name_ = temp_name_for(data.index);
    ::unlinkat(temp_parent_, temp_name_.c_str(), 0);
    temp_fd_ = ::openat(temp_parent_, temp_name_.c_str(),
                        O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (temp_fd_ < 0) {
      close_temp();
      return fail(e.path, errno_text());
    }
  }
  if (!write_all(temp_fd_, data.data)) {
    const std::string why = errno_text();
    ::unlinkat(temp_parent_, temp_name_.c_str(), 0);
    close_temp();
    return fail(e.path, why);
  }
  write_hash_.update(data.data);
  written_ += data.data.size();
  done_.bytes_received += data.data.size();
  if (written_ < e.size) return true;
  // Complete: check, give it its mode, rename it into place.
  std::string why;
  if (write_hash_.finish() != e.sha256) {
    why = "the content received does not match its SHA-256 (did it change while syncing?)";
  } else if (::fchmod(temp_fd_, e.mode) != 0) {
    why = errno_text();
  } else if (clear_dir_in_way(temp_parent_, temp_leaf_, e.path) &&
             ::renameat(temp_parent_, temp_name_.c_str(), temp_parent_, temp_leaf_.c_str()) != 0) {
    why = errno_text();
  }
  const bool ok = why.empty() && !failed();
  if (!ok) ::unlinkat(temp_parent_, temp_name_.c_str(), 0);
  close_temp();
  written_ = 0;
  if (!ok) return failed() ? false : fail(e.path, why);
  ++done_.files_written;
  ++next_want_;
  return true;
}

bool SyncReceiver::remove_tree(int parent, const std::string& name) {
  const int fd = ::openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return ::unlinkat(parent, name.c_str(), 0) == 0;
  DIR* d = ::fdopendir(fd);
  if (d == nullptr) {
    ::close(fd);
    return false;
  }
  std::vector<std::pair<std::string, bool>> children;
  while (const dirent* ent = ::readdir(d)) {
    const std::string child = ent->d_name;
    if (child == "." || child == "..") continue;
    struct stat st {};
    const bool is_dir =
        ::fstatat(fd, child.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
    children.emplace_back(child, is_dir);
  }
  bool ok = true;
  for (const auto& [child, is_dir] : children) {
    if (is_dir) {
      ok = remove_tree(fd, child) && ok;
    } else if (::unlinkat(fd, child.c_str(), 0) != 0 && errno != ENOENT) {
      ok = false;
    }
  }
  ::closedir(d);  // closes fd
  // ENOENT: a host sharing the directory removed it first.
  return (::unlinkat(parent, name.c_str(), AT_REMOVEDIR) == 0 || errno == ENOENT) && ok;
}

// Walks the destination without following links; removes what the offer
// lacks unless the rules ignore it (then its whole subtree is kept).
void SyncReceiver::delete_under(int dirfd, const std::string& rel) {
  DIR* d = ::fdopendir(::dup(dirfd));
  if (d == nullptr) return;
  ::rewinddir(d);  // the duplicate shares its offset with `dirfd`
  std::vector<std::string> names;
  while (const dirent* ent = ::readdir(d)) {
    const std::string name = ent->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  ::closedir(d);
  for (const auto& name : names) {
    const std::string path = rel.empty() ? name : rel + "/" + name;
    struct stat st {};
    if (::fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    const bool is_dir = S_ISDIR(st.st_mode);
    // Another host's file in flight, or this run's markers (agent/sync_markers.h).
    if (!is_dir && name.starts_with(kSyncFilePrefix)) continue;
    if (rules_.ignored(path, is_dir)) continue;
    const auto it = offered_.find(path);
    if (it != offered_.end()) {
      if (is_dir && entries_[it->second].kind == proto::SyncKind::dir) {
        const int sub =
            ::openat(dirfd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sub >= 0) {
          delete_under(sub, path);
          ::close(sub);
        }
      }
      continue;
    }
    const bool removed =
        is_dir ? remove_tree(dirfd, name) : ::unlinkat(dirfd, name.c_str(), 0) == 0;
    if (removed || errno == ENOENT) {  // ENOENT: a host sharing the directory was first
      ++done_.deleted;
    } else {
      fail(path, "cannot delete: " + errno_text());
    }
  }
}

void SyncReceiver::delete_extra() {
  offered_.reserve(entries_.size());
  for (std::size_t i = 0; i < entries_.size(); ++i) offered_.emplace(entries_[i].path, i);
  delete_under(dest_fd_, "");
}

void SyncReceiver::set_dir_modes() {
  for (auto it = entries_.rbegin(); it != entries_.rend(); ++it) {
    if (it->kind != proto::SyncKind::dir) continue;
    std::string leaf;
    const int parent = open_parent(it->path, &leaf);
    if (parent < 0) return;
    const int fd = ::openat(parent, leaf.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    ::close(parent);
    if (fd < 0) {
      fail(it->path, errno_text());
      return;
    }
    struct stat st {};
    if (::fstat(fd, &st) == 0 && (st.st_mode & 07777) != it->mode && ::fchmod(fd, it->mode) != 0)
      fail(it->path, errno_text());
    ::close(fd);
  }
}

proto::SyncDone SyncReceiver::finish() {
  if (!failed() && !data_complete()) fail("", "finished before every file arrived");
  if (!failed() && delete_extra_) delete_extra();
  if (!failed()) set_dir_modes();
  proto::SyncDone done = done_;
  done.error = error_;
  if (done.error.size() > proto::kMaxStopReason) done.error.resize(proto::kMaxStopReason);
  return done;
}

}  // namespace dlaunch
