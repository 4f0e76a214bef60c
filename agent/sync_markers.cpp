#include "agent/sync_markers.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "protocol/sha256.h"

namespace dlaunch {

SyncMarkers sync_markers(const std::string& dest, std::string_view secret) {
  // A one-way tag: the file name must not give the secret away.
  const std::string tag =
      to_hex(sha256(std::string("dlaunch sync marker\n") + std::string(secret))).substr(0, 16);
  const std::string base = dest + "/" + std::string(kSyncFilePrefix) + tag;
  return {base + ".owner", base + ".done"};
}

bool claim_sync_destination(const SyncMarkers& markers) {
  const int fd = ::open(markers.owner.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd >= 0) {
    ::close(fd);
    return true;
  }
  return errno != EEXIST;
}

void publish_sync_done(const SyncMarkers& markers) {
  const int fd = ::open(markers.done.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  if (fd >= 0) ::close(fd);
}

bool sync_done_published(const SyncMarkers& markers) {
  return ::access(markers.done.c_str(), F_OK) == 0;
}

void remove_sync_markers(const SyncMarkers& markers) {
  ::unlink(markers.done.c_str());
  ::unlink(markers.owner.c_str());
}

}  // namespace dlaunch
