// MNIST in memory: the standard IDX files (plain or gzip), or a deterministic,
// learnable synthetic set of the same shape for machines that cannot download
// the real one. Images are normalized like the classic example.
#pragma once

#include <torch/torch.h>

#include <stdexcept>
#include <string>

namespace mnist {

struct Dataset {
  torch::Tensor images;  // N x 1 x 28 x 28, float, normalized
  torch::Tensor labels;  // N, int64
  std::int64_t size() const { return labels.size(0); }
};

class DataError : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Reads <dir>/<prefix>-images-idx3-ubyte[.gz] and the matching labels file.
// `prefix` is "train" or "t10k". Throws DataError naming the file.
Dataset load_mnist(const std::string& dir, const std::string& prefix);

// `n` samples: ten fixed stroke patterns (one per class), randomly shifted and
// noised from `seed`. The same arguments give the same data on every rank.
Dataset synthetic_mnist(std::int64_t n, std::uint64_t seed);

}  // namespace mnist
