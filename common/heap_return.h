// Freed heap memory goes back to the kernel.
//
// glibc keeps the blocks that a burst of work freed for reuse. Those in the
// middle of a heap stay in the process's RSS, since malloc only trims the
// heap's top by itself. A long job's coordinator meets a burst whenever it
// falls behind its agents for a moment (another process takes the CPU, the
// disk stalls), so its RSS climbed in steps that never came down: in a soak,
// +870 KiB after a minute of CPU contention, all of it free memory that
// malloc_trim(0) then returned. Trimming now and then keeps the RSS at what
// is in use, which is what a multi-day job needs.
#pragma once

namespace dlaunch {

// Gives the free pages of every malloc arena back to the kernel (glibc's
// malloc_trim(0)); does nothing with another C library. It walks the free
// blocks: a millisecond or less for the coordinator's heap.
void return_free_heap();

}  // namespace dlaunch
