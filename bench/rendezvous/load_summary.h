// What a load process reports: the JSON summary of rdzv_load.py, key for
// key, so that bench/rendezvous/scale.py and the tests read either load
// generator's output the same way. Workers hand theirs to the parent in a
// line format of their own (exact doubles, no JSON parser needed), and the
// parent merges them as rdzv_load.py's merge() does.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dlaunch::load {

// Counters by name, in the order each first appeared (a Python dict's order).
class Counts {
 public:
  void add(std::string_view name, double amount);
  double get(std::string_view name) const;
  const std::vector<std::pair<std::string, double>>& items() const { return items_; }

 private:
  std::vector<std::pair<std::string, double>> items_;
};

// The timeline, in time.time() seconds; first_* keep the earliest, last_* the latest.
inline constexpr std::array<const char*, 8> kTimeNames = {
    "first_welcome", "last_welcome", "first_probe", "last_probe",
    "first_assign",  "last_assign",  "first_stop",  "last_stop"};
enum TimeIndex : std::size_t {
  kFirstWelcome,
  kLastWelcome,
  kFirstProbe,
  kLastProbe,
  kFirstAssign,
  kLastAssign,
  kFirstStop,
  kLastStop
};

struct Summary {
  std::int64_t agents = 0;
  Counts outcomes;
  Counts stop_codes;  // by the Stop's exit code, as text
  std::int64_t attempts = 0;
  // [node, rank_offset, local_world_size, world_size, nnodes] per assigned agent
  std::vector<std::array<std::int32_t, 5>> assigned;
  Counts stats;  // counts, and sums of milliseconds for names ending in "_ms"
  std::array<std::optional<double>, kTimeNames.size()> times{};
  std::vector<std::string> errors;

  // Sets times[i] to `t` if it is the first (i even) or the last (i odd) so far.
  void note_time(std::size_t i, double t);
};

// A worker's summary as rdzv_load.py --worker prints it (every time, null when unset).
std::string worker_json(const Summary& s);
// The merged summary as rdzv_load.py prints it: `assigned` as a count, only the times seen.
std::string merged_json(const Summary& s);

// Worker -> parent.
std::string serialize(const Summary& s);
std::optional<Summary> deserialize(std::string_view text);

// rdzv_load.py's merge(): sums, concatenations, earliest first_* and latest last_*.
Summary merge(const std::vector<Summary>& parts);

}  // namespace dlaunch::load
