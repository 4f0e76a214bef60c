// What `dlaunch stacks` and the hang verdict learn of one rank, taken on its
// host without stopping it longer than a dump takes and never killing it:
// - always, from /proc: its state (R S D T Z), the CPU time it used over a
//   short sample, where the kernel has it waiting (wchan), and each thread's;
// - a Python rank: the Python stack of every thread through faulthandler,
//   which the agent's sitecustomize (python_stack_hook) registers on
//   kStackSignal in every Python process of the job; it dumps from the signal
//   handler without the GIL, so also a rank blocked in a collective or a lock;
//   with py-spy on the host's PATH, its dump with native frames too;
// - any other rank: the native stack of every thread, by eu-stack, else gdb,
//   where the host has one.
// - torch's NCCL flight recorder dump, asked for through the rank's pipe
//   (agent/flight_recorder.h), or the one a watchdog timeout wrote;
// A stopped rank (T) gets no dump: taking one would mean continuing it.
// Blocking (tools take up to seconds): run off the event loop.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "agent/flight_recorder.h"
#include "common/result.h"
#include "protocol/messages.h"

namespace dlaunch {

// Real-time, so that no trainer's own SIGUSR1/SIGUSR2 (Slurm's preemption
// warning, Lightning's requeue) is taken; sent only to a process that
// registered it (its dump file exists), since its default action kills.
int stack_signal();

struct StackTools {
  std::string py_spy, eu_stack, gdb;  // full paths; empty: not on this host
  static StackTools on_this_host();
};

struct RankToInspect {
  int rank = 0;
  pid_t pid = -1;
  std::int64_t silent_ms = -1;
  // Where the job's Python processes dump (python_stack_hook); empty: none.
  std::string python_dumps;
  // Its NCCL flight recorder's dump and pipe (agent/flight_recorder.h).
  FlightRecorderPaths flight;
};

proto::StacksReport take_rank_stack(const RankToInspect& rank, const StackTools& tools);

// A directory of this host private to this agent, holding the sitecustomize
// that registers faulthandler and the dumps it writes (py-<pid>.txt). What a
// rank's environment needs for it: PYTHONPATH first, DLAUNCH_STACKS_DIR.
struct PythonStackHook {
  std::string directory;    // the dumps
  std::string python_path;  // the sitecustomize's directory
};
Result<PythonStackHook> make_python_stack_hook();
void remove_python_stack_hook(const PythonStackHook& hook);

}  // namespace dlaunch
