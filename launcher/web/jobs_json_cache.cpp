#include "launcher/web/jobs_json_cache.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <vector>

#include "common/json.h"
#include "common/posix.h"
#include "launcher/cli/job_view.h"

namespace dlaunch {
JobsJsonCache::Key JobsJsonCache::key_of(const std::string& dir) {
  Key key;
  struct stat st {};
  if (::stat((dir + "/job.toml").c_str(), &st) == 0) {
    key.record_ns = mtime_ns(st);
    key.record_size = static_cast<long long>(st.st_size);
    key.record_inode = static_cast<long long>(st.st_ino);
  }
  if (::stat(dir.c_str(), &st) == 0) key.dir_ns = mtime_ns(st);
  if (::stat((dir + "/stacks/last.txt").c_str(), &st) == 0) key.stacks_ns = mtime_ns(st);
  return key;
}

std::string JobsJsonCache::jobs_array(const std::string& log_dir, long long now) {
  namespace fs = std::filesystem;
  const std::lock_guard lock(mutex_);
  std::set<std::string> seen;
  std::error_code ec;
  for (const auto& item : fs::directory_iterator(log_dir, ec)) {
    if (!item.is_directory(ec)) continue;
    const std::string dir = item.path().string();
    const Key key = key_of(dir);
    if (key.record_ns < 0) continue;  // no record: not a job
    seen.insert(dir);
    const auto cached = entries_.find(dir);
    if (cached != entries_.end() && cached->second.key == key && !cached->second.json.empty())
      continue;
    auto job = load_job(dir);
    if (!job) {
      entries_.erase(dir);
      continue;
    }
    JsonWriter json;
    write_job_json(json, *job, now);
    Entry entry{key, job->info.started_ms, job->info.name, json.text()};
    // An active job's JSON moves with the clock: made again at every request.
    if (is_active(job->status) || job->status == JobStatus::stalled) entry.key = Key{};
    entries_[dir] = std::move(entry);
  }
  std::erase_if(entries_, [&seen](const auto& e) { return !seen.contains(e.first); });
  std::vector<const Entry*> order;
  order.reserve(entries_.size());
  for (const auto& [dir, entry] : entries_) order.push_back(&entry);
  std::sort(order.begin(), order.end(), [](const Entry* a, const Entry* b) {
    return std::tie(a->started_ms, a->name) > std::tie(b->started_ms, b->name);
  });
  std::string out = "[";
  for (const auto* e : order) {
    if (out.size() > 1) out += ',';
    out += e->json;
  }
  out += ']';
  return out;
}

}  // namespace dlaunch
