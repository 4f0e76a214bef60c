// How queued frames leave a socket: several at a time, in one write of up to
// kMaxWriteBatch bytes, so that many small frames (rank output lines) cost one
// system call rather than one each. The agents' connections and the relays'
// channels both write this way.
#pragma once

#include <cstddef>
#include <deque>
#include <string>

namespace dlaunch {

inline constexpr std::size_t kMaxWriteBatch = 256 * 1024;

// Moves whole frames from the front of `queue` to the end of `batch` while the
// batch stays within kMaxWriteBatch bytes, and always at least one frame into
// an empty batch (a frame may be larger). Returns the bytes moved.
std::size_t take_write_batch(std::deque<std::string>& queue, std::string& batch);

}  // namespace dlaunch
