// `dlaunch check --nccl`'s numbers, the way nccl-tests' all_reduce_perf
// prints them: per message size the time of one all-reduce, the algorithm
// bandwidth (bytes / time) and the bus bandwidth, algbw * 2(n-1)/n for n
// ranks, which is comparable across rank counts and against the hardware's
// link speed. Pure.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "launcher/check/check_result.h"

namespace dlaunch {

// The sizes tested: 8 B, then x4 while at most `max_bytes` (8 B to 32 MiB by
// default: at 1 Gb/s between regions 25 all-reduces of 32 MiB take ~13 s).
std::vector<std::int64_t> nccl_test_sizes(std::int64_t max_bytes = 64LL << 20);

struct NcclRow {
  std::int64_t bytes = 0;
  std::int64_t count = 0;  // floats
  double time_us = 0;
  double algbw_gbs = 0;  // GB/s, 1e9 bytes
  double busbw_gbs = 0;
};
NcclRow nccl_row(const proto::NcclTiming& timing, int nranks);

// The table and the average bus bandwidth; or why the test did not run.
std::string format_nccl_text(const NcclCheck& nccl);

}  // namespace dlaunch
