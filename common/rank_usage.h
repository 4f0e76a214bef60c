// The CPU and memory of the dlaunch ranks running on this machine, read from
// /proc, for `dlaunch top job`. The ranks are found by their environment
// (common/gpu_holders.h); this adds what their counters say.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace dlaunch {

// One process's counters at one moment.
struct ProcessUsage {
  std::string command;               // the kernel's name for it (comm)
  unsigned long long cpu_ticks = 0;  // user + system time, in clock ticks
  long long rss_bytes = 0;           // resident memory
};

// Pure: the counters in proc_stat's fields (common/posix.h), with pages of
// `page_size` bytes; nothing when the fields are too few or not numbers.
std::optional<ProcessUsage> usage_from_stat(const std::vector<std::string>& fields, long page_size);

// The counters of `pid` now; nothing when there is no such process.
std::optional<ProcessUsage> process_usage(pid_t pid);

// Pure: `ticks` of CPU time spent over `interval_s` seconds, in percent of one
// CPU (above 100 for a process that keeps several busy); 0 for no interval.
double cpu_percent(unsigned long long ticks, double ticks_per_s, double interval_s);

// A rank process of a dlaunch job on this machine, and what it uses.
struct RankSample {
  int pid = 0;
  std::string job;
  std::string rank;  // RANK as the process has it; empty when unset
  std::string host;  // DLAUNCH_HOST
  std::string command;
  double cpu_pct = 0;
  long long rss_bytes = 0;
  std::optional<int> gpu;  // common/gpu_holders.h's rank_gpu
};

// Every rank process here: its CPU use over `interval_s` (this sleeps that
// long between two readings; a rank that started in between has 0) and its
// memory at the end. Ranks that ended in between are left out.
std::vector<RankSample> sample_ranks_here(double interval_s);

}  // namespace dlaunch
