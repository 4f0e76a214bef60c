#include "distributed.h"

#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#ifdef MNIST_WITH_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace mnist {
namespace {

constexpr std::int64_t kBucketBytes = 25 * 1024 * 1024;

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

std::string env_str(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

bool is_loopback(const std::string& addr) {
  return addr == "localhost" || addr == "::1" || addr.rfind("127.", 0) == 0;
}

// The Gloo device binds where peers can reach this rank: the interface from
// GLOO_SOCKET_IFNAME, loopback when the job is on this machine, else this
// host's name (like torchrun).
std::shared_ptr<::gloo::transport::Device> gloo_device(const std::string& master_addr) {
  if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME"); ifname && *ifname) {
    return c10d::ProcessGroupGloo::createDeviceForInterface(ifname);
  }
  if (is_loopback(master_addr)) return c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1");
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  return c10d::ProcessGroupGloo::createDeviceForHostname(host);
}

void wait(const c10::intrusive_ptr<c10d::Work>& work) {
  if (!work->wait()) throw std::runtime_error("collective failed");
}

}  // namespace

Distributed init_distributed(const std::string& backend) {
  Distributed d;
  d.world = env_int("WORLD_SIZE", 1);
  d.rank = env_int("RANK", 0);
  d.local_rank = env_int("LOCAL_RANK", 0);
  if (d.world <= 1) return d;
  const std::string master_addr = env_str("MASTER_ADDR", "127.0.0.1");
  c10d::TCPStoreOptions store_options;
  store_options.port = static_cast<std::uint16_t>(env_int("MASTER_PORT", 29500));
  store_options.isServer = d.rank == 0;
  store_options.numWorkers = static_cast<std::size_t>(d.world);
  store_options.timeout = std::chrono::minutes(5);
  auto store = c10::make_intrusive<c10d::TCPStore>(master_addr, store_options);
  if (backend == "nccl") {
#ifdef MNIST_WITH_NCCL
    d.group = c10::make_intrusive<c10d::ProcessGroupNCCL>(
        store, d.rank, d.world, c10d::ProcessGroupNCCL::Options::create());
#else
    throw std::runtime_error(
        "this mnist_dist was built without NCCL (CPU LibTorch); use --backend gloo");
#endif
  } else {
    auto options = c10d::ProcessGroupGloo::Options::create();
    options->devices.push_back(gloo_device(master_addr));
    options->timeout = std::chrono::minutes(5);
    d.group = c10::make_intrusive<c10d::ProcessGroupGloo>(store, d.rank, d.world, options);
  }
  return d;
}

void broadcast_parameters(Distributed& d, const std::vector<torch::Tensor>& params) {
  if (!d.group) return;
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> views;
  for (const auto& p : params) views.push_back(p.reshape({-1}));
  std::vector<torch::Tensor> buffer{torch::cat(views)};
  wait(d.group->broadcast(buffer, c10d::BroadcastOptions{}));
  std::int64_t at = 0;
  for (const auto& p : params) {
    p.copy_(buffer[0].narrow(0, at, p.numel()).view_as(p));
    at += p.numel();
  }
}

void average_gradients(Distributed& d, const std::vector<torch::Tensor>& params) {
  if (!d.group) return;
  torch::NoGradGuard no_grad;
  const auto start = std::chrono::steady_clock::now();
  std::size_t first = 0;
  while (first < params.size()) {
    // One bucket: consecutive gradients up to kBucketBytes, flattened.
    std::size_t last = first;
    std::int64_t bytes = 0;
    std::vector<torch::Tensor> views;
    while (last < params.size() &&
           (views.empty() || bytes + params[last].numel() * 4 <= kBucketBytes)) {
      views.push_back(params[last].grad().reshape({-1}));
      bytes += params[last].numel() * 4;
      ++last;
    }
    std::vector<torch::Tensor> bucket{torch::cat(views)};
    wait(d.group->allreduce(bucket, c10d::AllreduceOptions{}));
    ++d.allreduce_calls;
    bucket[0].div_(d.world);
    std::int64_t at = 0;
    for (std::size_t i = first; i < last; ++i) {
      auto g = params[i].grad();
      g.copy_(bucket[0].narrow(0, at, g.numel()).view_as(g));
      at += g.numel();
    }
    first = last;
  }
  d.allreduce_seconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void broadcast_bytes(Distributed& d, std::string& bytes, const torch::Device& device) {
  if (!d.group) return;
  const auto as_long = torch::TensorOptions().dtype(torch::kLong).device(device);
  std::vector<torch::Tensor> size{
      torch::tensor({static_cast<std::int64_t>(bytes.size())}, as_long)};
  wait(d.group->broadcast(size, c10d::BroadcastOptions{}));
  const auto n = size[0].item<std::int64_t>();
  if (n == 0) return;
  std::vector<torch::Tensor> data{torch::empty({n}, torch::TensorOptions().dtype(torch::kByte))};
  if (d.rank == 0) std::memcpy(data[0].data_ptr(), bytes.data(), static_cast<std::size_t>(n));
  data[0] = data[0].to(device);
  wait(d.group->broadcast(data, c10d::BroadcastOptions{}));
  const auto host = data[0].to(torch::kCPU).contiguous();
  bytes.assign(static_cast<const char*>(host.data_ptr()), static_cast<std::size_t>(n));
}

void all_reduce_sum(Distributed& d, torch::Tensor& t) {
  if (!d.group) return;
  std::vector<torch::Tensor> v{t};
  wait(d.group->allreduce(v, c10d::AllreduceOptions{}));
}

}  // namespace mnist
