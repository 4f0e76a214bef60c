#include "transfer/file_mirror.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "protocol/relative_path.h"

namespace dlaunch {
namespace {

bool make_dir(const std::string& dir, mode_t mode) {
  return ::mkdir(dir.c_str(), mode) == 0 || errno == EEXIST;
}

bool write_at(int fd, std::string_view data, std::uint64_t offset) {
  while (!data.empty()) {
    const ssize_t n = ::pwrite(fd, data.data(), data.size(), static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = EIO;
      return false;
    }
    data.remove_prefix(static_cast<std::size_t>(n));
    offset += static_cast<std::uint64_t>(n);
  }
  return true;
}

// ".NAME.dlaunch-part" beside `path`.
std::string part_path(const std::string& path) {
  const auto slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  const std::string leaf = slash == std::string::npos ? path : path.substr(slash + 1);
  return dir + "." + leaf + std::string(FileMirror::kPartSuffix);
}

}  // namespace

bool is_partial_file(std::string_view name) {
  return name.ends_with(FileMirror::kPartSuffix);
}

FileMirror::FileMirror(std::string root, Options options)
    : root_(std::move(root)), options_(std::move(options)) {}

// mkdir -p for the root (once) and the parents of `relative` under it.
bool FileMirror::make_parents(std::string_view relative) {
  const mode_t mode = options_.private_files ? 0700 : 0777;
  if (!root_made_) {
    for (std::size_t slash = root_.find('/', 1); slash != std::string::npos;
         slash = root_.find('/', slash + 1)) {
      if (!make_dir(root_.substr(0, slash), mode)) return false;
    }
    if (!make_dir(root_, mode)) return false;
    root_made_ = true;
  }
  std::size_t slash = relative.find('/');
  while (slash != std::string_view::npos) {
    if (!make_dir(root_ + "/" + std::string(relative.substr(0, slash)), mode)) return false;
    slash = relative.find('/', slash + 1);
  }
  return true;
}

// Opens `path` and writes the chunk's bytes at its offset; on failure, what
// failed ("open", "write") with errno kept.
const char* FileMirror::write_file(const std::string& path, const proto::FileChunk& chunk) const {
  const int flags = O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | (chunk.restart ? O_TRUNC : 0);
  const int fd = ::open(path.c_str(), flags, options_.private_files ? 0600 : 0666);
  if (fd < 0) return "open";
  const bool ok = write_at(fd, chunk.data, chunk.offset);
  const int saved = errno;
  ::close(fd);
  errno = saved;
  return ok ? nullptr : "write";
}

Result<void> FileMirror::refuse(const std::string& path, std::string why) {
  if (failed_.size() >= kMaxFiles) {
    if (refusals_unsaid_) return {};
    refusals_unsaid_ = true;
    return fail("refused " + std::to_string(kMaxFiles) + " " + options_.what + " files from " +
                options_.source + "; the rest are refused without a word");
  }
  if (!failed_.insert(path).second) return {};
  return fail(std::move(why));
}

Result<std::uint64_t> FileMirror::check_bounds(const proto::FileChunk& chunk) {
  const auto it = sizes_.find(chunk.path);
  const std::uint64_t end = it == sizes_.end() ? 0 : it->second;
  const std::string file = options_.what + " file " + chunk.path + " from " + options_.source;
  if (it == sizes_.end() && sizes_.size() >= kMaxFiles)
    return fail("refused " + file + ": the copy already holds " + std::to_string(kMaxFiles) +
                " files");
  // A sender appends: a version starts at 0 and each chunk where the last ended.
  if (chunk.restart ? chunk.offset != 0 : (it == sizes_.end() || chunk.offset > end))
    return fail("refused " + file + ": a chunk at offset " + std::to_string(chunk.offset) +
                ", past the " + std::to_string(chunk.restart ? 0 : end) +
                " bytes that came before it");
  const std::uint64_t old = chunk.restart ? 0 : end;
  const std::uint64_t grown = std::max(old, chunk.offset + chunk.data.size()) - old;
  const std::uint64_t others = total_ - end;
  if (others + old + grown > options_.max_bytes)
    return fail("refused " + file + ": the copy would take more than " +
                std::to_string(options_.max_bytes) + " bytes (what this disk can spare)");
  return grown;
}

Result<void> FileMirror::write(const proto::FileChunk& chunk) {
  if (!safe_relative_path(chunk.path) || is_partial_file(chunk.path)) {
    return refuse(chunk.path, "refused a " + options_.what + " file path from " + options_.source +
                                  ": '" + chunk.path + "'");
  }
  // A checkpoint file that starts again gets a new chance.
  if (options_.whole_files && chunk.restart) failed_.erase(chunk.path);
  if (failed_.contains(chunk.path)) return {};
  // The rest of a version whose start this copy never saw.
  if (options_.whole_files && !chunk.restart && !partial_.contains(chunk.path)) return {};
  const auto grown = check_bounds(chunk);
  if (!grown) return refuse(chunk.path, grown.error());
  auto& end = sizes_[chunk.path];
  if (chunk.restart) {
    total_ -= end;
    end = 0;
  }
  end += *grown;
  total_ += *grown;
  const std::string path = root_ + "/" + chunk.path;
  if (!make_parents(chunk.path)) {
    failed_.insert(chunk.path);
    return fail("cannot create the directory of " + path + ": " + std::strerror(errno));
  }
  if (options_.whole_files) return write_whole(chunk, path);
  if (const char* what = write_file(path, chunk)) {
    failed_.insert(chunk.path);
    return fail(std::string("cannot ") + what + " " + path + ": " + std::strerror(errno) +
                " (the " + options_.what + " copy of this file stops here)");
  }
  return {};
}

Result<void> FileMirror::write_whole(const proto::FileChunk& chunk, const std::string& path) {
  if (chunk.restart) {
    partial_.insert(chunk.path);
  } else if (!partial_.contains(chunk.path)) {
    return {};  // the rest of a version whose start this copy never saw
  }
  const std::string part = part_path(path);
  const char* what = write_file(part, chunk);
  if (!what && chunk.complete && ::rename(part.c_str(), path.c_str()) != 0) what = "rename";
  if (what) {
    const std::string why = std::strerror(errno);
    ::unlink(part.c_str());
    partial_.erase(chunk.path);
    failed_.insert(chunk.path);
    return fail(std::string("cannot ") + what + " " + part + ": " + why + " (the " + options_.what +
                " copy keeps the last complete " + chunk.path + ")");
  }
  if (chunk.complete) partial_.erase(chunk.path);
  return {};
}

}  // namespace dlaunch
