// mnist_dist: data-parallel MNIST training in LibTorch, the C++ counterpart of
// the classic PyTorch DistributedDataParallel example run under torchrun. Every
// rank trains the same network on its shard of each epoch; gradients are
// averaged across ranks after every backward pass.
#include <torch/torch.h>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <stdexcept>

#include "checkpoint.h"
#include "distributed.h"
#include "event_writer.h"
#include "mnist_data.h"
#include "model.h"
#include "options.h"
#include "sampler.h"

namespace mnist {
namespace {

// --hang-at-step: a rank stuck in a native call, as one in a driver or a lock
// would be; the others block in their next all-reduce. Not inlined, so that
// a native stack names it.
[[noreturn]] __attribute__((noinline)) void hang_here() {
  std::fprintf(stderr, "mnist_dist: --hang-at-step: this rank hangs in hang_here() now\n");
  std::fflush(stderr);
  for (;;) ::pause();
}

torch::Tensor gather_rows(const torch::Tensor& t, const std::vector<std::int64_t>& rows,
                          std::size_t first, std::size_t count, const torch::Device& device) {
  auto index = torch::from_blob(const_cast<std::int64_t*>(rows.data()) + first,
                                {static_cast<std::int64_t>(count)}, torch::kInt64);
  return t.index_select(0, index).to(device);
}

std::pair<Dataset, Dataset> load_data(const Options& o) {
  if (o.synthetic > 0) {
    return {synthetic_mnist(o.synthetic, o.seed * 7919 + 1),
            synthetic_mnist(std::max<std::int64_t>(o.synthetic / 6, 100), o.seed * 7919 + 2)};
  }
  return {load_mnist(o.data, "train"), load_mnist(o.data, "t10k")};
}

void dump_weights(const std::string& pattern, int rank, const std::vector<torch::Tensor>& params) {
  std::string path = pattern;
  if (const auto at = path.find("{rank}"); at != std::string::npos) {
    path.replace(at, 6, std::to_string(rank));
  } else {
    path += "." + std::to_string(rank);
  }
  std::ofstream out(path, std::ios::binary);
  for (const auto& p : params) {
    const auto cpu = p.detach().to(torch::kCPU).contiguous();
    out.write(static_cast<const char*>(cpu.data_ptr()),
              static_cast<std::streamsize>(cpu.numel() * 4));
  }
  if (!out.flush()) throw std::runtime_error("cannot write weights to " + path);
}

// Accuracy over the whole test set: each rank evaluates its slice, the counts
// are summed across ranks.
std::pair<double, double> evaluate(Net& model, const Dataset& test, Distributed& d,
                                   const Options& o, const torch::Device& device) {
  torch::NoGradGuard no_grad;
  model->eval();
  std::vector<std::int64_t> mine;
  for (std::int64_t i = d.rank; i < test.size(); i += d.world) mine.push_back(i);
  double loss_sum = 0, correct = 0;
  for (std::size_t at = 0; at < mine.size(); at += static_cast<std::size_t>(o.test_batch_size)) {
    const std::size_t n = std::min(mine.size() - at, static_cast<std::size_t>(o.test_batch_size));
    auto x = gather_rows(test.images, mine, at, n, device);
    auto y = gather_rows(test.labels, mine, at, n, device);
    auto out = model->forward(x);
    loss_sum += torch::nll_loss(out, y, {}, torch::Reduction::Sum).item<double>();
    correct += out.argmax(1).eq(y).sum().item<double>();
  }
  auto totals = torch::tensor({loss_sum, correct, static_cast<double>(mine.size())},
                              torch::TensorOptions().dtype(torch::kFloat64).device(device));
  all_reduce_sum(d, totals);
  totals = totals.cpu();
  const double count = totals[2].item<double>();
  model->train();
  return {totals[0].item<double>() / count, totals[1].item<double>() / count};
}

// --checkpoint-dir: only node 0 has the file (dlaunch carries it to a new node
// 0), so rank 0 reads it and every rank loads rank 0's bytes: all resume at
// the same epoch with the same model and optimizer state. Returns the first
// epoch to train.
int resume_from_dir(Distributed& d, const std::string& path, Net& model,
                    torch::optim::SGD& optimizer, const torch::Device& device) {
  std::string bytes = d.rank == 0 ? read_checkpoint_file(path) : std::string();
  broadcast_bytes(d, bytes, device);
  if (bytes.empty()) return 1;
  const int done = load_checkpoint_bytes(bytes, path, model, optimizer, device);
  if (d.rank == 0) {
    const char* round = std::getenv("TORCHELASTIC_RESTART_COUNT");
    std::printf("mnist_dist: resuming at epoch %d from %s (round %s)\n", done + 1, path.c_str(),
                round ? round : "0");
    std::fflush(stdout);
  }
  return done + 1;
}

int train(const Options& o) {
  const bool cuda = !o.no_cuda && torch::cuda::is_available();
  const std::string backend = o.backend.empty() ? (cuda ? "nccl" : "gloo") : o.backend;
  if (backend == "nccl" && !cuda) {
    throw std::runtime_error("--backend nccl needs CUDA (none available or --no-cuda given)");
  }
  // Data before the rendezvous: a missing file ends this rank before it makes
  // the others wait for it.
  auto [train_set, test_set] = load_data(o);
  Distributed d = init_distributed(backend);
  const torch::Device device =
      cuda ? torch::Device(torch::kCUDA, d.local_rank) : torch::Device(torch::kCPU);
  torch::manual_seed(o.seed);
  Net model;
  model->to(device);
  torch::optim::SGD optimizer(model->parameters(),
                              torch::optim::SGDOptions(o.lr).momentum(o.momentum));
  int first_epoch = 1;
  if (!o.resume.empty()) first_epoch = load_checkpoint(o.resume, model, optimizer) + 1;
  const std::string checkpoint =
      o.checkpoint_dir.empty() ? std::string() : o.checkpoint_dir + "/mnist_dist.pt";
  if (!checkpoint.empty()) first_epoch = resume_from_dir(d, checkpoint, model, optimizer, device);
  const auto params = model->parameters();
  broadcast_parameters(d, params);

  std::unique_ptr<EventWriter> events;
  if (d.rank == 0 && !o.dir.empty()) events = std::make_unique<EventWriter>(o.dir);
  if (d.rank == 0) {
    std::printf("mnist_dist: %d rank%s, backend %s, device %s, %lld training samples%s\n", d.world,
                d.world == 1 ? "" : "s", d.group ? backend.c_str() : "none", device.str().c_str(),
                static_cast<long long>(train_set.size()), o.synthetic > 0 ? " (synthetic)" : "");
    std::fflush(stdout);
  }

  std::int64_t samples = 0;
  double train_seconds = 0;
  std::int64_t steps = 0;
  for (int epoch = first_epoch; epoch <= o.epochs; ++epoch) {
    const auto indices = shard_indices(train_set.size(), d.rank, d.world, o.seed, epoch, true);
    const std::int64_t global_size = static_cast<std::int64_t>(indices.size()) * d.world;
    const auto start = std::chrono::steady_clock::now();
    std::size_t batch_idx = 0;
    for (std::size_t at = 0; at < indices.size();
         at += static_cast<std::size_t>(o.batch_size), ++batch_idx) {
      const std::size_t n = std::min(indices.size() - at, static_cast<std::size_t>(o.batch_size));
      auto x = gather_rows(train_set.images, indices, at, n, device);
      auto y = gather_rows(train_set.labels, indices, at, n, device);
      if (o.hang_at_step > 0 && steps + 1 == o.hang_at_step && d.rank == o.hang_rank) hang_here();
      optimizer.zero_grad();
      auto loss = torch::nll_loss(model->forward(x), y);
      loss.backward();
      average_gradients(d, params);
      optimizer.step();
      samples += static_cast<std::int64_t>(n) * d.world;
      ++steps;
      if (d.rank == 0 && batch_idx % static_cast<std::size_t>(o.log_interval) == 0) {
        const double value = loss.item<double>();
        const std::int64_t seen = static_cast<std::int64_t>(at + n) * d.world;
        std::printf("Train Epoch: %d [%lld/%lld (%.0f%%)]\tloss=%.4f\n", epoch,
                    static_cast<long long>(seen), static_cast<long long>(global_size),
                    100.0 * static_cast<double>(seen) / static_cast<double>(global_size), value);
        std::fflush(stdout);
        if (events) events->scalar("loss", static_cast<float>(value), samples);
      }
    }
    if (cuda) torch::cuda::synchronize();
    train_seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const auto [test_loss, accuracy] = evaluate(model, test_set, d, o, device);
    if (d.rank == 0) {
      std::printf("Test Epoch: %d loss=%.4f accuracy=%.4f\n", epoch, test_loss, accuracy);
      std::fflush(stdout);
      if (events) events->scalar("accuracy", static_cast<float>(accuracy), epoch);
      if (!o.save_model.empty()) save_checkpoint(o.save_model, model, optimizer, epoch);
      if (!checkpoint.empty()) {
        std::filesystem::create_directories(o.checkpoint_dir);
        save_checkpoint(checkpoint, model, optimizer, epoch);
      }
    }
  }
  if (!o.dump_weights.empty()) dump_weights(o.dump_weights, d.rank, params);
  if (d.rank == 0 && train_seconds > 0) {
    std::printf("throughput samples/s=%.1f", static_cast<double>(samples) / train_seconds);
    if (d.group && steps > 0) {
      std::printf(" allreduce ms/step=%.3f",
                  1000.0 * d.allreduce_seconds / static_cast<double>(steps));
    }
    std::printf("\n");
  }
  // Nobody leaves before everyone is done with the group.
  if (d.group) {
    auto done = torch::zeros({1}, torch::TensorOptions().device(device));
    all_reduce_sum(d, done);
  }
  return 0;
}

}  // namespace
}  // namespace mnist

int main(int argc, char** argv) {
  const mnist::Options options = mnist::parse_options(argc, argv);
  try {
    return mnist::train(options);
  } catch (const mnist::DataError& e) {
    std::fprintf(stderr, "mnist_dist: %s\n", e.what());
    return 2;
  } catch (const c10::Error& e) {
    // LibTorch's what() carries a C++ backtrace; one line is what users need.
    std::fprintf(stderr, "mnist_dist: error: %s\n", e.what_without_backtrace());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mnist_dist: error: %s\n", e.what());
    return 1;
  }
}
