#include "launcher/check/nccl_report.h"

#include <cstdio>
#include <sstream>

namespace dlaunch {

std::vector<std::int64_t> nccl_test_sizes(std::int64_t max_bytes) {
  std::vector<std::int64_t> sizes;
  for (std::int64_t bytes = 8; bytes <= max_bytes; bytes *= 4) sizes.push_back(bytes);
  return sizes;
}

NcclRow nccl_row(const proto::NcclTiming& timing, int nranks) {
  NcclRow row;
  row.bytes = timing.bytes;
  row.count = timing.bytes / 4;
  row.time_us = static_cast<double>(timing.time_ns) / 1000.0;
  if (timing.time_ns > 0)
    row.algbw_gbs = static_cast<double>(timing.bytes) / static_cast<double>(timing.time_ns);
  row.busbw_gbs = nranks > 0 ? row.algbw_gbs * 2.0 * (nranks - 1) / nranks : 0.0;
  return row;
}

std::string format_nccl_text(const NcclCheck& nccl) {
  std::ostringstream out;
  if (!nccl.skipped.empty()) {
    out << "nccl: not run: " << nccl.skipped << "\n";
    return out.str();
  }
  out << "nccl: all-reduce across " << nccl.gpus << (nccl.gpus == 1 ? " GPU" : " GPUs") << " on "
      << nccl.hosts << (nccl.hosts == 1 ? " host" : " hosts");
  if (!nccl.version.empty()) out << " (NCCL " << nccl.version << ")";
  out << ", float sum, " << nccl.iterations << " iterations each\n";
  if (!nccl.error.empty()) {
    out << "  FAILED: " << nccl.error << "\n";
    return out.str();
  }
  char line[160];
  std::snprintf(line, sizeof line, "%12s  %12s  %6s  %5s  %10s  %7s  %7s\n", "size", "count",
                "type", "redop", "time", "algbw", "busbw");
  out << line;
  std::snprintf(line, sizeof line, "%12s  %12s  %6s  %5s  %10s  %7s  %7s\n", "(B)", "(elements)",
                "", "", "(us)", "(GB/s)", "(GB/s)");
  out << line;
  double busbw_sum = 0;
  for (const auto& t : nccl.timings) {
    const auto row = nccl_row(t, nccl.gpus);
    busbw_sum += row.busbw_gbs;
    std::snprintf(line, sizeof line, "%12lld  %12lld  %6s  %5s  %10.2f  %7.2f  %7.2f\n",
                  static_cast<long long>(row.bytes), static_cast<long long>(row.count), "float",
                  "sum", row.time_us, row.algbw_gbs, row.busbw_gbs);
    out << line;
  }
  if (!nccl.timings.empty()) {
    std::snprintf(line, sizeof line, " Avg bus bandwidth    : %.2f GB/s\n",
                  busbw_sum / static_cast<double>(nccl.timings.size()));
    out << line;
  }
  return out.str();
}

}  // namespace dlaunch
