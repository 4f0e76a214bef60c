#include "launcher/output/file_mirror.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "protocol/relative_path.h"

namespace dlaunch {
namespace {

// mkdir -p, 0700, for the parents of `relative` under `root`.
bool make_parents(const std::string& root, std::string_view relative) {
  if (::mkdir(root.c_str(), 0700) != 0 && errno != EEXIST) return false;
  std::size_t slash = relative.find('/');
  while (slash != std::string_view::npos) {
    const std::string dir = root + "/" + std::string(relative.substr(0, slash));
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return false;
    slash = relative.find('/', slash + 1);
  }
  return true;
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

}  // namespace

FileMirror::FileMirror(std::string root) : root_(std::move(root)) {}

std::optional<std::string> FileMirror::write(const proto::FileChunk& chunk) {
  if (!safe_relative_path(chunk.path)) {
    if (!failed_.insert(chunk.path).second) return std::nullopt;
    return "refused a TensorBoard file path from rank 0's host: '" + chunk.path + "'";
  }
  if (failed_.contains(chunk.path)) return std::nullopt;
  const std::string path = root_ + "/" + chunk.path;
  auto fail = [&](const char* what) -> std::optional<std::string> {
    failed_.insert(chunk.path);
    return std::string("cannot ") + what + " " + path + ": " + std::strerror(errno) +
           " (the TensorBoard copy of this file stops here)";
  };
  if (!make_parents(root_, chunk.path)) return fail("create the directory of");
  const int flags = O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | (chunk.restart ? O_TRUNC : 0);
  const int fd = ::open(path.c_str(), flags, 0600);
  if (fd < 0) return fail("open");
  const bool ok = write_at(fd, chunk.data, chunk.offset);
  const int saved = errno;
  ::close(fd);
  errno = saved;
  if (!ok) return fail("write");
  return std::nullopt;
}

}  // namespace dlaunch
