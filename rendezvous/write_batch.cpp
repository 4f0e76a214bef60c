#include "rendezvous/write_batch.h"

namespace dlaunch {

std::size_t take_write_batch(std::deque<std::string>& queue, std::string& batch) {
  std::size_t moved = 0;
  while (!queue.empty() &&
         (batch.empty() || batch.size() + queue.front().size() <= kMaxWriteBatch)) {
    moved += queue.front().size();
    if (batch.empty()) {
      batch = std::move(queue.front());
    } else {
      batch += queue.front();
    }
    queue.pop_front();
  }
  return moved;
}

}  // namespace dlaunch
