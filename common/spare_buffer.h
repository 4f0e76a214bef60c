// One buffer's room kept for the next: a writer that queues bytes in buffers
// and frees each once written would, in a flood, allocate a buffer (and fault
// in its fresh pages) for every write. Handing the written buffer's room back
// for the next one makes a steady flood allocate nothing. The terminal writer
// and the rendezvous connections' output both work this way.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <utility>

namespace dlaunch {

class SpareBuffer {
 public:
  // New buffers get room for `room` bytes; a written one is kept if its room
  // is at most `keep_at_most` (a rare huge one goes back to the heap).
  SpareBuffer(std::size_t room, std::size_t keep_at_most)
      : room_(room), keep_at_most_(keep_at_most) {}

  // An empty buffer with room for at least max(`bytes`, room): the spare when
  // it has the room for `bytes`, else a new one.
  std::string take(std::size_t bytes) {
    std::string buffer = spare_.capacity() >= bytes ? std::exchange(spare_, {}) : std::string();
    buffer.reserve(std::max(bytes, room_));
    return buffer;
  }
  // A buffer whose bytes are written: kept as the spare if there is none.
  void give_back(std::string&& written) {
    if (spare_.capacity() > 0 || written.capacity() > keep_at_most_) return;
    written.clear();
    spare_ = std::move(written);
  }
  // The spare goes back to the heap (before malloc_trim, say).
  void release() { spare_ = std::string(); }

 private:
  std::size_t room_;
  std::size_t keep_at_most_;
  std::string spare_;
};

}  // namespace dlaunch
