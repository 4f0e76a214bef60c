#include "sampler.h"

#include <numeric>
#include <random>

namespace mnist {

std::vector<std::int64_t> shard_indices(std::int64_t dataset_size, int rank, int world,
                                        std::uint64_t seed, int epoch, bool shuffle) {
  std::vector<std::int64_t> order(static_cast<std::size_t>(dataset_size));
  std::iota(order.begin(), order.end(), 0);
  if (shuffle) {
    // Our own Fisher-Yates over mt19937_64: std::shuffle's algorithm is not
    // specified, and every rank must agree on the permutation.
    std::mt19937_64 rng(seed + static_cast<std::uint64_t>(epoch));
    for (std::size_t i = order.size(); i > 1; --i) {
      const std::size_t j = static_cast<std::size_t>(rng() % i);
      std::swap(order[i - 1], order[j]);
    }
  }
  const std::int64_t per_rank = (dataset_size + world - 1) / world;
  const std::int64_t total = per_rank * world;
  for (std::int64_t i = dataset_size; i < total; ++i) {
    order.push_back(order[static_cast<std::size_t>(i - dataset_size)]);
  }
  std::vector<std::int64_t> mine;
  mine.reserve(static_cast<std::size_t>(per_rank));
  for (std::int64_t i = rank; i < total; i += world)
    mine.push_back(order[static_cast<std::size_t>(i)]);
  return mine;
}

}  // namespace mnist
