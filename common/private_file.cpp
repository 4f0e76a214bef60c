#include "common/private_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "common/posix.h"

namespace dlaunch {
namespace {

Failure<std::string> failure(const std::string& what, const std::string& path, int error) {
  return fail("cannot " + what + " " + path + ": " + std::strerror(error));
}

// Closes the descriptor and removes the temporary unless it was renamed.
class TempFile {
 public:
  explicit TempFile(std::string path_template) : path_(std::move(path_template)) {
    fd_ = ::mkostemp(path_.data(), O_CLOEXEC);
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  ~TempFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!renamed_) ::unlink(path_.c_str());
  }

  bool opened() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  // Closes and reports the error close() saw (NFS reports write-back failures there).
  int close() {
    const int result = ::close(fd_);
    fd_ = -1;
    return result;
  }
  void mark_renamed() { renamed_ = true; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
  bool renamed_ = false;
};

// The rename is durable only once the directory itself is on disk.
int sync_directory(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return -1;
  const int result = ::fsync(fd);
  const int saved = errno;
  ::close(fd);
  errno = saved;
  return result;
}

}  // namespace

Result<void> write_private_file(const std::string& dir, const std::string& name,
                                const std::string& content) {
  return write_file_whole(dir, name, content, 0600);
}

Result<void> write_file_whole(const std::string& dir, const std::string& name,
                              const std::string& content, mode_t mode) {
  const std::string path = dir + "/" + name;
  // Hidden and unique, in the same directory so that rename() is atomic;
  // mkostemp creates it 0600.
  TempFile tmp(dir + "/." + name + ".XXXXXX");
  if (!tmp.opened()) return failure("create a temporary file for", path, errno);
  if (mode != 0600 && ::fchmod(tmp.fd(), mode) != 0) return failure("write", path, errno);
  if (!write_all(tmp.fd(), content)) return failure("write", path, errno);
  if (::fsync(tmp.fd()) != 0) return failure("write", path, errno);
  if (tmp.close() != 0) return failure("write", path, errno);
  if (::rename(tmp.path().c_str(), path.c_str()) != 0) return failure("rename to", path, errno);
  tmp.mark_renamed();
  if (sync_directory(dir) != 0) return failure("flush the directory of", path, errno);
  return {};
}

}  // namespace dlaunch
