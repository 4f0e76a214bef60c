#include "launcher/record/job_claim.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <stdexcept>

#include "launcher/record/job_store.h"

namespace dlaunch {
namespace {

// flock on <log_dir>/.lock for the lifetime of the object.
class StateDirLock {
 public:
  explicit StateDirLock(const std::string& log_dir) {
    const std::string path = log_dir + "/.lock";
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd_ < 0) throw std::runtime_error("cannot open " + path + ": " + std::strerror(errno));
    while (::flock(fd_, LOCK_EX) != 0) {
      if (errno != EINTR) {
        const int error = errno;
        ::close(fd_);
        throw std::runtime_error("cannot lock " + path + ": " + std::strerror(error));
      }
    }
  }
  StateDirLock(const StateDirLock&) = delete;
  StateDirLock& operator=(const StateDirLock&) = delete;
  ~StateDirLock() { ::close(fd_); }  // closing releases the lock

 private:
  int fd_ = -1;
};

bool exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

std::string stamp(long long unix_seconds) {
  const std::time_t t =
      static_cast<std::time_t>(unix_seconds > 0 ? unix_seconds : std::time(nullptr));
  std::tm tm{};
  ::localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", &tm);
  return buf;
}

// Moves a finished job's directory out of the way; returns the new name.
std::string archive(const std::string& log_dir, const std::string& name, long long started) {
  const std::string base = name + "." + stamp(started);
  for (int n = 1; n < 10000; ++n) {
    const std::string candidate = n == 1 ? base : base + "-" + std::to_string(n);
    if (exists(log_dir + "/" + candidate)) continue;
    if (::rename((log_dir + "/" + name).c_str(), (log_dir + "/" + candidate).c_str()) != 0) {
      throw std::runtime_error("cannot move " + log_dir + "/" + name +
                               " aside: " + std::strerror(errno));
    }
    return candidate;
  }
  throw std::runtime_error("too many jobs named " + name + " in " + log_dir);
}

ClaimedJob create(const std::string& log_dir, const std::string& name, JobInfo& info) {
  ClaimedJob claimed{name, log_dir + "/" + name, {}, {}};
  if (::mkdir(claimed.dir.c_str(), 0700) != 0) {
    throw std::runtime_error("cannot create " + claimed.dir + ": " + std::strerror(errno));
  }
  info.name = name;
  if (auto error = write_job_record(claimed.dir, info)) claimed.write_error = *error;
  return claimed;
}

}  // namespace

std::variant<ClaimedJob, NameTaken> claim_job(const std::string& log_dir, const std::string& name,
                                              bool exact, JobInfo info) {
  make_private_dirs(log_dir);
  StateDirLock lock(log_dir);
  if (!exact) {
    for (int attempt = 1; attempt < 10000; ++attempt) {
      const std::string candidate = attempt == 1 ? name : name + "-" + std::to_string(attempt);
      if (!exists(log_dir + "/" + candidate)) return create(log_dir, candidate, info);
    }
    throw std::runtime_error("too many jobs named " + name + " in " + log_dir);
  }
  std::string archived;
  if (exists(log_dir + "/" + name)) {
    // A directory without a readable record is a job that never got going.
    const auto old = load_job(log_dir + "/" + name);
    if (old && is_active(old->status)) {
      return NameTaken{name, old->info.coordinator_pid, old->status};
    }
    archived = archive(log_dir, name, old ? old->info.started : 0);
  }
  ClaimedJob claimed = create(log_dir, name, info);
  claimed.archived_as = archived;
  return claimed;
}

}  // namespace dlaunch
