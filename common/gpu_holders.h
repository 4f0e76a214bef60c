// Which dlaunch job holds which GPU of this host, told from the environment of
// the processes running here: a rank carries DLAUNCH_JOB=<job>, and its GPU is
// CUDA_VISIBLE_DEVICES's entry at its LOCAL_RANK when that list has more than
// one entry, the single entry when it has one, else LOCAL_RANK itself (as
// trainers call torch.cuda.set_device(LOCAL_RANK)). A host without GPUs has no
// holders. Entries that are not indices (GPU UUIDs, MIG names) name no index
// here and are left out rather than guessed.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dlaunch {

// What matters of one process's environment. `job` is empty for a process
// that is no rank of a dlaunch job.
struct RankEnvironment {
  int pid = 0;
  std::string job;
  std::string rank;  // RANK as given; empty when unset
  std::string host;  // DLAUNCH_HOST
  std::optional<std::string> cuda_visible_devices;
  std::optional<int> local_rank;
};

// Pure: the variables of a /proc/PID/environ block (NUL-separated NAME=VALUE).
RankEnvironment parse_rank_environment(std::string_view environ_block);

// Pure: the GPU index a rank uses on a host with `host_gpus` GPUs; nothing when
// it cannot be told or is outside 0..host_gpus-1.
std::optional<int> rank_gpu(const RankEnvironment& rank, int host_gpus);

// Pure: GPU index -> the job holding it, from the environments of the
// processes running on a host with `host_gpus` GPUs. When ranks of two jobs
// name one GPU, the first in `ranks` wins.
std::map<int, std::string> gpu_holders(const std::vector<RankEnvironment>& ranks, int host_gpus);

// Every process of this machine that is a rank of a dlaunch job (whose
// environment this user may read), by scanning /proc/*/environ.
std::vector<RankEnvironment> dlaunch_ranks_here();

}  // namespace dlaunch
