#include "common/rank_usage.h"

#include <unistd.h>

#include <chrono>
#include <exception>
#include <map>
#include <thread>

#include "common/gpu_holders.h"
#include "common/gpus.h"
#include "common/posix.h"

namespace dlaunch {

std::optional<ProcessUsage> usage_from_stat(const std::vector<std::string>& fields,
                                            long page_size) {
  // proc(5): utime and stime are fields 14 and 15, rss (in pages) field 24.
  if (fields.size() < 24) return std::nullopt;
  try {
    ProcessUsage usage;
    usage.command = fields[1];
    usage.cpu_ticks = std::stoull(fields[13]) + std::stoull(fields[14]);
    usage.rss_bytes = std::stoll(fields[23]) * page_size;
    return usage;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::optional<ProcessUsage> process_usage(pid_t pid) {
  return usage_from_stat(proc_stat(pid), ::sysconf(_SC_PAGESIZE));
}

double cpu_percent(unsigned long long ticks, double ticks_per_s, double interval_s) {
  if (interval_s <= 0 || ticks_per_s <= 0) return 0;
  return 100.0 * static_cast<double>(ticks) / ticks_per_s / interval_s;
}

std::vector<RankSample> sample_ranks_here(double interval_s) {
  std::map<int, unsigned long long> before;
  for (const auto& r : dlaunch_ranks_here()) {
    if (const auto usage = process_usage(r.pid)) before[r.pid] = usage->cpu_ticks;
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(interval_s));
  const double ticks_per_s = static_cast<double>(::sysconf(_SC_CLK_TCK));
  const int host_gpus = count_gpu_devices();
  std::vector<RankSample> out;
  for (const auto& r : dlaunch_ranks_here()) {
    const auto usage = process_usage(r.pid);
    if (!usage) continue;
    RankSample s;
    s.pid = r.pid;
    s.job = r.job;
    s.rank = r.rank;
    s.host = r.host;
    s.command = usage->command;
    s.rss_bytes = usage->rss_bytes;
    s.gpu = rank_gpu(r, host_gpus);
    // Fewer ticks than before: the pid is another process's now.
    const auto it = before.find(r.pid);
    if (it != before.end() && usage->cpu_ticks >= it->second)
      s.cpu_pct = cpu_percent(usage->cpu_ticks - it->second, ticks_per_s, interval_s);
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace dlaunch
