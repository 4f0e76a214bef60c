// What list, get and top say about a job, computed once: its rank count,
// restarts, where its logs and TensorBoard events are, and the job as JSON
// (`--json` on list and get; the fields are documented in the README).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/json.h"
#include "launcher/record/job_store.h"

namespace dlaunch {

// World size: the result's, else the sum of the nodes' ranks once assigned.
int job_ranks(const Job& job);
// A node's state as the job commands show it: as recorded, except that a LOST
// job's nodes still "running" or "pending" are "unknown" (the coordinator
// that would have said otherwise is gone).
std::string shown_node_state(const Job& job, const NodeRecord& node);
// Restart rounds so far.
int job_restarts(const Job& job);
// <job dir>/tensorboard, where the events of --tensorboard-dir arrive.
std::string tensorboard_logdir(const Job& job);
// <job dir>/checkpoint, the coordinator's copy of --checkpoint-dir.
std::string checkpoint_copy(const Job& job);
// "42s", "3m", "2h", "5d": time since the job started.
std::string format_age(long long seconds);

// One job as a JSON object.
void write_job_json(JsonWriter& json, const Job& job, long long now);

// The stacks gathered last (`dlaunch stacks`, a stall): their directory and
// the verdict's lines; nothing when none were.
struct LastStacks {
  std::string dir;
  std::vector<std::string> verdict;
};
std::optional<LastStacks> last_stacks(const std::string& job_dir);

}  // namespace dlaunch
