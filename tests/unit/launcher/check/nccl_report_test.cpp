#include <doctest/doctest.h>

#include "launcher/check/nccl_report.h"

using namespace dlaunch;

TEST_CASE("NCCL sizes: 8 B, x4, up to the limit") {
  const auto sizes = nccl_test_sizes();
  REQUIRE(sizes.size() == 12);
  CHECK(sizes.front() == 8);
  CHECK(sizes[1] == 32);
  CHECK(sizes.back() == 32LL << 20);
  CHECK(nccl_test_sizes(1024) == std::vector<std::int64_t>{8, 32, 128, 512});
}

TEST_CASE("NCCL bandwidths as nccl-tests computes them") {
  // 1 GB in 10 ms: 100 GB/s algorithm bandwidth; on 8 ranks the bus carries
  // 2 * 7/8 of it.
  const auto row = nccl_row({1'000'000'000, 10'000'000}, 8);
  CHECK(row.count == 250'000'000);
  CHECK(row.time_us == doctest::Approx(10'000));
  CHECK(row.algbw_gbs == doctest::Approx(100.0));
  CHECK(row.busbw_gbs == doctest::Approx(175.0));
  // One rank moves nothing over a bus.
  CHECK(nccl_row({1024, 1000}, 1).busbw_gbs == 0.0);
  CHECK(nccl_row({1024, 0}, 2).algbw_gbs == 0.0);
}

TEST_CASE("NCCL table: header, a row per size, the average bus bandwidth") {
  NcclCheck nccl;
  nccl.requested = true;
  nccl.gpus = 2;
  nccl.hosts = 2;
  nccl.iterations = 20;
  nccl.version = "2.27.3";
  nccl.timings = {{8, 20'000}, {32LL << 20, 4'000'000}};
  const auto text = format_nccl_text(nccl);
  CHECK(text.find("nccl: all-reduce across 2 GPUs on 2 hosts (NCCL 2.27.3), float sum, 20 "
                  "iterations each\n") == 0);
  CHECK(text.find("size         count    type  redop        time    algbw    busbw") !=
        std::string::npos);
  // 32 MiB in 4 ms: 8.39 GB/s, and on 2 ranks the bus bandwidth equals it.
  CHECK(text.find("    33554432       8388608   float    sum     4000.00     8.39     8.39\n") !=
        std::string::npos);
  CHECK(text.find(" Avg bus bandwidth    : 4.19 GB/s\n") != std::string::npos);
  nccl.error = "h1: ncclCommInitRank: unhandled system error";
  CHECK(format_nccl_text(nccl).find("  FAILED: h1: ncclCommInitRank") != std::string::npos);
  NcclCheck skipped;
  skipped.skipped = "no host that is up has a GPU";
  CHECK(format_nccl_text(skipped) == "nccl: not run: no host that is up has a GPU\n");
}
