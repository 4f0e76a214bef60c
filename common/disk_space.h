// The space of the file system a path is on: for `dlaunch check`'s host facts,
// and for what the coordinator lets the copies of an agent's files take.
#pragma once

#include <cstdint>

namespace dlaunch {

// Bytes free to this user, and the file system's size; -1 when unknown
// (`path` null or not there).
std::int64_t free_disk_bytes(const char* path);
std::int64_t disk_size_bytes(const char* path);

// What files written under `path` for another machine may take: the free
// space less a reserve (5% of the file system, at least 1 GiB) for everything
// else this machine writes there. Unlimited when the space is unknown.
std::uint64_t spare_disk_bytes(const char* path);

}  // namespace dlaunch
