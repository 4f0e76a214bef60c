// An exclusive flock(2) on a file, created if missing, held for as long as the
// FileLock lives: closing the file releases it. Processes on this host (and on
// hosts sharing the file system, where it supports flock) take turns.
#pragma once

#include <string>

#include "common/result.h"

namespace dlaunch {

class FileLock {
 public:
  // Waits for the lock; an error names the file and why.
  static Result<FileLock> take(const std::string& path, int mode);

  FileLock(FileLock&& other) noexcept;
  FileLock& operator=(FileLock&&) = delete;
  ~FileLock();

 private:
  explicit FileLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace dlaunch
