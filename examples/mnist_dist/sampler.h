// Which samples each rank sees, like torch.utils.data.DistributedSampler:
// one permutation of the whole set per epoch (the same on every rank, from
// seed + epoch), padded by wrapping to a multiple of the world size, and rank r
// taking every world-th index from r. So one step of W ranks with batch B sees
// exactly the samples that one rank with batch W*B would.
#pragma once

#include <cstdint>
#include <vector>

namespace mnist {

std::vector<std::int64_t> shard_indices(std::int64_t dataset_size, int rank, int world,
                                        std::uint64_t seed, int epoch, bool shuffle);

}  // namespace mnist
