// Data-parallel plumbing over c10d: a TCPStore rendezvous at MASTER_ADDR:
// MASTER_PORT, a Gloo (CPU) or NCCL (CUDA) process group, rank 0's initial
// parameters broadcast to all, and gradients averaged with one all-reduce per
// flattened bucket rather than one per tensor.
#pragma once

#include <torch/torch.h>
#include <torch/version.h>

// LibTorch 2 moved the collectives of ProcessGroupGloo/NCCL into c10d::Backend
// (ProcessGroup became a dispatcher in front of them); 1.13, which Debian
// ships, still derives them from ProcessGroup. Either base has the
// allreduce/broadcast calls used here.
#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/distributed/c10d/Backend.hpp>
namespace mnist {
using Collectives = c10d::Backend;
}
#else
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
namespace mnist {
using Collectives = c10d::ProcessGroup;
}
#endif

#include <string>
#include <vector>

namespace mnist {

struct Distributed {
  int rank = 0;
  int world = 1;
  int local_rank = 0;
  c10::intrusive_ptr<Collectives> group;  // null when running alone
  double allreduce_seconds = 0;           // time spent in gradient all-reduce
  std::int64_t allreduce_calls = 0;
};

// Reads RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT; alone when unset.
Distributed init_distributed(const std::string& backend);

void broadcast_parameters(Distributed& d, const std::vector<torch::Tensor>& params);
void average_gradients(Distributed& d, const std::vector<torch::Tensor>& params);
// Rank 0's `bytes` reach every rank (a checkpoint only node 0 holds); the
// tensors travel on `device`, which NCCL needs to be the rank's GPU.
void broadcast_bytes(Distributed& d, std::string& bytes, const torch::Device& device);
// Sums a small tensor across ranks in place.
void all_reduce_sum(Distributed& d, torch::Tensor& t);

}  // namespace mnist
