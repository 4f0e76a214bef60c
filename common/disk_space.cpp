#include "common/disk_space.h"

#include <sys/statvfs.h>

#include <algorithm>
#include <limits>

namespace dlaunch {

std::int64_t free_disk_bytes(const char* path) {
  struct statvfs st {};
  if (path == nullptr || ::statvfs(path, &st) != 0) return -1;
  return static_cast<std::int64_t>(st.f_bavail) * static_cast<std::int64_t>(st.f_frsize);
}

std::int64_t disk_size_bytes(const char* path) {
  struct statvfs st {};
  if (path == nullptr || ::statvfs(path, &st) != 0) return -1;
  return static_cast<std::int64_t>(st.f_blocks) * static_cast<std::int64_t>(st.f_frsize);
}

std::uint64_t spare_disk_bytes(const char* path) {
  const std::int64_t free = free_disk_bytes(path);
  const std::int64_t size = disk_size_bytes(path);
  if (free < 0 || size < 0) return std::numeric_limits<std::uint64_t>::max();
  const std::int64_t reserve = std::max<std::int64_t>(std::int64_t{1} << 30, size / 20);
  return free > reserve ? static_cast<std::uint64_t>(free - reserve) : 0;
}

}  // namespace dlaunch
