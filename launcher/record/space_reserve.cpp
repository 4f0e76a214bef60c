#include "launcher/record/space_reserve.h"

#include <fcntl.h>
#include <unistd.h>

#include <utility>

namespace dlaunch {

SpaceReserve::SpaceReserve(std::string path, std::size_t bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return;
  // posix_fallocate gives the file real blocks (glibc writes them where the
  // filesystem cannot allocate), unlike ftruncate's hole.
  const bool taken = ::posix_fallocate(fd, 0, static_cast<off_t>(bytes)) == 0;
  ::close(fd);
  if (!taken) {
    ::unlink(path.c_str());
    return;
  }
  path_ = std::move(path);
}

SpaceReserve::~SpaceReserve() {
  release();
}

SpaceReserve::SpaceReserve(SpaceReserve&& other) noexcept : path_(std::exchange(other.path_, {})) {}

SpaceReserve& SpaceReserve::operator=(SpaceReserve&& other) noexcept {
  if (this != &other) {
    release();
    path_ = std::exchange(other.path_, {});
  }
  return *this;
}

bool SpaceReserve::release() {
  if (path_.empty()) return false;
  ::unlink(path_.c_str());
  path_.clear();
  return true;
}

std::size_t record_reserve_bytes(int nnodes) {
  // A node's table is about 112 bytes (job_record.cpp); twice that, and 64 KiB
  // for the rest: the history and the root cause's tail are bounded lists.
  constexpr std::size_t kPerNode = 256;
  constexpr std::size_t kRest = 64 * 1024;
  return kRest + static_cast<std::size_t>(nnodes > 0 ? nnodes : 0) * kPerNode;
}

}  // namespace dlaunch
