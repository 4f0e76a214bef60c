// torch's NCCL flight recorder (torch >= 2.3 with NCCL process groups): a
// ring of each rank's last collectives, which torch dumps to a file on a
// watchdog timeout, or when a byte is written to the rank's named pipe. The
// agent turns it on for its ranks unless the user set the variables, and asks
// each rank for a dump when stacks are gathered, so that the analyzer
// (torchfrtrace) can name the rank missing from a collective.
//
// The variables (both spellings: torch 2.6 renamed them, and warns about the
// old name when only it is set):
//   TORCH_FR_BUFFER_SIZE, TORCH_NCCL_TRACE_BUFFER_SIZE        2000 entries
//   TORCH_NCCL_DUMP_ON_TIMEOUT                                1
//   TORCH_FR_DUMP_TEMP_FILE, TORCH_NCCL_DEBUG_INFO_TEMP_FILE  <dir>/nccl_trace_rank_
//   TORCH_NCCL_DEBUG_INFO_PIPE_FILE                           <dir>/nccl_trace_rank_
// where <dir> is flight_recorder_dir(job): kept after the job, so that a dump
// written on a watchdog timeout outlives the ranks. Rank R's dump is the
// temp file's prefix followed by R; its pipe the pipe prefix, R, ".pipe".
#pragma once

#include <chrono>
#include <string>

#include "protocol/rank_env.h"

namespace dlaunch {

// <user_temp_directory()>/flight-recorder/<job>, made 0700; empty where this
// user has no private scratch directory (then the ranks get no recorder files).
std::string flight_recorder_dir(const std::string& job);

// Where the rank's dump and pipe are, as its environment says (empty: none).
struct FlightRecorderPaths {
  std::string dump_prefix;
  std::string pipe_prefix;
};

// Sets what the user did not; the paths the rank will use.
FlightRecorderPaths add_flight_recorder_environment(EnvMap& env, const std::string& dir);

struct FlightRecord {
  std::string bytes;  // the dump, when it fits a report
  std::string note;   // one line for the rank's stack file; empty: no dump
};

// Step 1: writes a byte to the rank's pipe, where torch's watchdog reads it
// (nothing when no process holds it open: no NCCL process group). Returns
// the dump file's modification time before, to tell a new dump from an old.
struct FlightRecordAsked {
  bool asked = false;
  std::int64_t before_ns = -1;  // -1: no dump file yet
};
FlightRecordAsked ask_flight_record(const FlightRecorderPaths& paths, int rank);
// Step 2: the dump, once it is newer and no longer growing, or within `wait`
// whatever is there (a dump written on a watchdog timeout included).
FlightRecord collect_flight_record(const FlightRecorderPaths& paths, int rank,
                                   const FlightRecordAsked& asked, std::chrono::milliseconds wait);

}  // namespace dlaunch
