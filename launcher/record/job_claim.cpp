#include "launcher/record/job_claim.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <utility>

#include "common/file_lock.h"
#include "launcher/record/job_store.h"

namespace dlaunch {
namespace {

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
Result<std::string> archive(const std::string& log_dir, const std::string& name,
                            long long started) {
  const std::string base = name + "." + stamp(started);
  for (int n = 1; n < 10000; ++n) {
    const std::string candidate = n == 1 ? base : base + "-" + std::to_string(n);
    if (exists(log_dir + "/" + candidate)) continue;
    if (::rename((log_dir + "/" + name).c_str(), (log_dir + "/" + candidate).c_str()) != 0) {
      return fail("cannot move " + log_dir + "/" + name + " aside: " + std::strerror(errno));
    }
    return candidate;
  }
  return fail("too many jobs named " + name + " in " + log_dir);
}

Result<ClaimedJob> create(const std::string& log_dir, const std::string& name, JobInfo& info) {
  ClaimedJob claimed{name, log_dir + "/" + name, {}, {}};
  if (::mkdir(claimed.dir.c_str(), 0700) != 0)
    return fail("cannot create " + claimed.dir + ": " + std::strerror(errno));
  info.name = name;
  if (auto written = write_job_record(claimed.dir, info); !written)
    claimed.write_error = written.error();
  return claimed;
}

}  // namespace

Result<ClaimedJob, ClaimRefused> claim_job(const std::string& log_dir, const std::string& name,
                                           NameRule rule, JobInfo info) {
  auto refused = [](std::string error) {
    return fail(ClaimRefused{std::nullopt, std::move(error)});
  };
  if (auto made = make_private_dirs(log_dir); !made) return refused(made.error());
  // One dlaunch at a time decides whose the name is (<log_dir>/.lock).
  auto lock = FileLock::take(log_dir + "/.lock", 0600);
  if (!lock) return refused(lock.error());
  // A directory without a readable record is a job that never got going.
  const auto old = rule == NameRule::numbered ? std::nullopt : load_job(log_dir + "/" + name);
  const bool held = old && is_active(old->status);
  std::string taken_name = name;
  std::string archived;
  if (rule == NameRule::numbered || (rule == NameRule::exact_unless_active && held)) {
    for (int attempt = 1; exists(log_dir + "/" + taken_name); ++attempt) {
      if (attempt == 9999) return refused("too many jobs named " + name + " in " + log_dir);
      taken_name = name + "-" + std::to_string(attempt + 1);
    }
  } else if (exists(log_dir + "/" + name)) {
    if (held)
      return fail(ClaimRefused{NameTaken{name, old->info.coordinator_pid, old->status,
                                         old->elsewhere ? old->info.coordinator_host : ""},
                               {}});
    auto moved = archive(log_dir, name, old ? old->info.started : 0);
    if (!moved) return refused(moved.error());
    archived = *moved;
  }
  auto claimed = create(log_dir, taken_name, info);
  if (!claimed) return refused(claimed.error());
  claimed->archived_as = archived;
  return std::move(*claimed);
}

}  // namespace dlaunch
