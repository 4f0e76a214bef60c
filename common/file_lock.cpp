#include "common/file_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace dlaunch {

Result<FileLock> FileLock::take(const std::string& path, int mode) {
  FileLock lock(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, mode));
  if (lock.fd_ < 0) return fail("cannot open " + path + ": " + std::strerror(errno));
  while (::flock(lock.fd_, LOCK_EX) != 0) {
    if (errno != EINTR) return fail("cannot lock " + path + ": " + std::strerror(errno));
  }
  return lock;
}

FileLock::FileLock(FileLock&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace dlaunch
