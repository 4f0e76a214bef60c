// Command-line flags of mnist_dist, with the defaults of the classic PyTorch
// MNIST example.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace mnist {

struct Options {
  int epochs = 1;
  int batch_size = 64;  // per rank
  int test_batch_size = 1000;
  double lr = 0.01;
  double momentum = 0.5;
  std::uint64_t seed = 1;
  int log_interval = 10;
  std::string data = "data";
  std::string dir;      // TensorBoard event files; empty: none
  std::string backend;  // gloo | nccl; empty: nccl with CUDA, else gloo
  bool no_cuda = false;
  std::string save_model;
  std::string resume;
  // Rank 0 writes DIR/mnist_dist.pt after every epoch, and a run that finds it
  // there resumes from it (all ranks get rank 0's copy). Defaults to
  // DLAUNCH_CHECKPOINT_DIR, which `dlaunch --checkpoint-dir` sets.
  std::string checkpoint_dir;
  int synthetic = 0;         // > 0: generate this many training samples instead of reading MNIST
  std::string dump_weights;  // raw float32 parameters at the end; "{rank}" is replaced
  // To try `dlaunch stacks` and --hang-timeout: at this global step (counted
  // from 1) rank hang_rank sleeps for ever in a native call, hang_here(),
  // while the others wait for it in the next all-reduce. 0: never.
  int hang_at_step = 0;
  int hang_rank = 0;
};

// Parses argv; on a bad flag prints usage to stderr and exits 2.
Options parse_options(int argc, char** argv);

}  // namespace mnist
