// Room kept on the state dir's filesystem for a job's last record. A job can
// fill its disk while it runs (checkpoints, rank logs); its final job.toml
// then could not be written, and `list` would call a job that succeeded LOST.
// The reserve is a file of real blocks made while there is room; giving it
// back frees exactly the space the last write needs.
#pragma once

#include <cstddef>
#include <string>

namespace dlaunch {

class SpaceReserve {
 public:
  SpaceReserve() = default;
  // Takes `bytes` at `path` now; holds nothing (and says nothing) where the
  // filesystem has no room left already.
  SpaceReserve(std::string path, std::size_t bytes);
  ~SpaceReserve();
  SpaceReserve(SpaceReserve&& other) noexcept;
  SpaceReserve& operator=(SpaceReserve&& other) noexcept;

  bool held() const { return !path_.empty(); }
  // Frees the room; true when there was any to free.
  bool release();

 private:
  std::string path_;
};

// What a job of `nnodes` nodes may need for its last record: its nodes'
// tables, its history and the root cause's tail, with room to spare.
std::size_t record_reserve_bytes(int nnodes);

}  // namespace dlaunch
