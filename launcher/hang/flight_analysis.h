// torch's flight recorder analyzer over one gathering's dumps: the
// coordinator writes each rank's dump as <stacks dir>/nccl_trace_rank_<R>,
// then runs `torchfrtrace --prefix nccl_trace_rank_ DIR` (torch >= 2.6; on
// 2.4-2.5 `python3 -m torch.distributed.flight_recorder.fr_trace`), whose
// report names a collective that not every rank joined and the missing
// ranks. Blocking: run off the event loop.
#pragma once

#include <string>
#include <vector>

namespace dlaunch {

inline constexpr const char* kFlightDumpPrefix = "nccl_trace_rank_";

struct FlightAnalysis {
  bool ran = false;
  std::string tool;   // "torchfrtrace", or the python module; empty: none here
  std::string text;   // what it printed (stdout, then stderr)
  std::string error;  // why it did not run or failed
};
FlightAnalysis analyze_flight_records(const std::string& dir);

// The lines of the analyzer's report worth the verdict (the collective, the
// missing ranks), at most `max_lines`; pure.
std::vector<std::string> flight_findings(const std::string& report, std::size_t max_lines = 6);

}  // namespace dlaunch
