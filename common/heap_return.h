// Freed heap memory goes back to the kernel, now and then.
//
// glibc keeps the blocks that a burst of work freed for reuse. Those in the
// middle of a heap stay in the process's RSS, since malloc only trims the
// heap's top by itself. A long job's coordinator meets a burst whenever it
// falls behind its agents for a moment (another process takes the CPU, the
// disk stalls), so its RSS climbed in steps that never came down: in a soak,
// +870 KiB after a minute of CPU contention, all of it free memory that
// malloc_trim(0) then returned. A periodic trim keeps the RSS at what is in
// use, which is what a multi-day job needs.
#pragma once

#include <asio/io_context.hpp>
#include <chrono>
#include <functional>

#include "common/clock.h"

namespace dlaunch {

// Gives the free pages of every malloc arena back to the kernel (glibc's
// malloc_trim(0)); does nothing with another C library.
void return_free_heap();

// Calls `trim` (return_free_heap unless a test gives another) every `period`
// on the event loop, from start() until the object is gone or the loop stops.
class PeriodicHeapReturn {
 public:
  PeriodicHeapReturn(asio::io_context& io, SteadyClock::duration period,
                     std::function<void()> trim = return_free_heap);
  void start();
  void stop() { timer_.cancel(); }

 private:
  Timer timer_;
  SteadyClock::duration period_;
  std::function<void()> trim_;
};

}  // namespace dlaunch
