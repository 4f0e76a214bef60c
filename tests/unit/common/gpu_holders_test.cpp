#include <doctest/doctest.h>

#include "common/gpu_holders.h"

using namespace dlaunch;

namespace {

using namespace std::string_literals;

RankEnvironment rank(std::string job, std::optional<int> local_rank,
                     std::optional<std::string> visible = std::nullopt) {
  RankEnvironment r;
  r.job = std::move(job);
  r.local_rank = local_rank;
  r.cuda_visible_devices = std::move(visible);
  return r;
}

}  // namespace

TEST_CASE("gpu holders: the variables of an environ block") {
  const auto env = parse_rank_environment(
      "PATH=/bin\0DLAUNCH_JOB=train\0RANK=3\0LOCAL_RANK=1\0DLAUNCH_HOST=h1\0"
      "CUDA_VISIBLE_DEVICES=2,3\0NOEQUALS\0"s);
  CHECK(env.job == "train");
  CHECK(env.rank == "3");
  CHECK(env.host == "h1");
  CHECK(env.local_rank == 1);
  CHECK(env.cuda_visible_devices == "2,3");
  const auto plain = parse_rank_environment("HOME=/root\0LOCAL_RANK=x\0"s);
  CHECK(plain.job.empty());
  CHECK(!plain.local_rank);
  CHECK(!plain.cuda_visible_devices);
  CHECK(parse_rank_environment("").job.empty());
  // No trailing NUL (a block cut short) still reads the last variable.
  CHECK(parse_rank_environment("DLAUNCH_JOB=a"s).job == "a");
}

TEST_CASE("gpu holders: a list of several is indexed by LOCAL_RANK") {
  CHECK(rank_gpu(rank("j", 1, "4,5,6"), 8) == 5);
  CHECK(rank_gpu(rank("j", 0, " 4, 5"), 8) == 4);
  CHECK(!rank_gpu(rank("j", 3, "4,5,6"), 8));  // past the list
  CHECK(!rank_gpu(rank("j", std::nullopt, "4,5"), 8));
  CHECK(!rank_gpu(rank("j", 0, "GPU-8f6c,GPU-1a2b"), 8));  // UUIDs name no index
  CHECK(!rank_gpu(rank("j", 1, "0,9"), 8));                // no such GPU here
}

TEST_CASE("gpu holders: a single entry is the GPU, whatever LOCAL_RANK says") {
  CHECK(rank_gpu(rank("j", 3, "2"), 4) == 2);
  CHECK(rank_gpu(rank("j", std::nullopt, "1"), 4) == 1);
  CHECK(!rank_gpu(rank("j", 0, ""), 4));  // hidden from every GPU
  CHECK(!rank_gpu(rank("j", 0, "-1"), 4));
  CHECK(!rank_gpu(rank("j", 0, "MIG-GPU-8f6c/1/0"), 4));
}

TEST_CASE("gpu holders: without CUDA_VISIBLE_DEVICES, LOCAL_RANK on a host with GPUs") {
  CHECK(rank_gpu(rank("j", 2), 4) == 2);
  CHECK(!rank_gpu(rank("j", 4), 4));
  CHECK(!rank_gpu(rank("j", std::nullopt), 4));
  CHECK(!rank_gpu(rank("j", 0), 0));  // no GPUs: nothing is held
  CHECK(!rank_gpu(rank("j", 0, "0"), 0));
}

TEST_CASE("gpu holders: GPU index to job; first one wins; non-ranks ignored") {
  const std::vector<RankEnvironment> ranks = {rank("a", 0), rank("a", 1), rank("b", 0, "3"),
                                              rank("c", 1, "2,3"), rank("", 2)};
  const auto holders = gpu_holders(ranks, 4);
  CHECK(holders == std::map<int, std::string>{{0, "a"}, {1, "a"}, {3, "b"}});
  CHECK(gpu_holders(ranks, 0).empty());
  CHECK(gpu_holders({}, 8).empty());
}
