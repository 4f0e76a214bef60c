// What `dlaunch check` found, and what it means: per host its facts or why it
// is down, the MASTER_ADDR choice, the pairwise matrix; then the warnings
// (a small /dev/shm, Python or torch versions that differ, a skewed clock)
// and whether a job could launch. Pure: the policy fills it, check_report
// prints it, unit tests judge made-up ones.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "protocol/messages.h"

namespace dlaunch {

// /dev/shm below this: PyTorch's DataLoader workers hand batches over in
// shared memory, and die with SIGBUS when it fills.
inline constexpr std::int64_t kMinShmBytes = 1LL << 30;
// A clock off by more than this (beyond the measurement's uncertainty)
// scrambles log timestamps across hosts and can break TLS and Kerberos.
inline constexpr std::int64_t kMaxClockSkewUs = 1'000'000;

struct HostCheck {
  std::string name;     // as in the hosts file
  std::string address;  // the hosts file's, what the coordinator reached it by
  bool up = false;      // reached, authenticated, joined and answered
  std::string error;    // why not up
  std::optional<proto::HostFacts> facts;
  // The host's clock minus ours, measured over one exchange; the true skew is
  // within +-uncertainty (half the exchange's round trip).
  std::optional<std::int64_t> clock_skew_us;
  std::int64_t clock_uncertainty_us = 0;
  std::string interface;     // its interface towards MASTER_ADDR (node 0: the one holding it)
  std::string test_address;  // the address its peers test it at (on that interface)
};

struct PairCheck {
  int from = 0;
  int to = 0;
  bool tested = false;  // false: one side was down, or no address to test
  proto::PeerResult result;
  std::string untested;  // why not tested
};

// `dlaunch check --nccl`: an all-reduce across every GPU of the hosts.
struct NcclCheck {
  bool requested = false;
  std::int32_t gpus = 0;   // ranks: every GPU of every host that was up
  std::int32_t hosts = 0;  // hosts with GPUs
  std::int32_t iterations = 0;
  std::string version = {};  // NCCL's, from rank 0's host
  std::string skipped = {};  // why it did not run though asked (no GPUs anywhere)
  std::string error = {};    // why it failed, naming the host
  std::vector<proto::NcclTiming> timings = {};  // per size, the slowest host's time
};

struct CheckResult {
  std::vector<HostCheck> hosts;  // in hosts-file order (node rank)
  bool master_chosen = false;
  std::string master_addr;
  std::string master_report;  // net::choose_master's report, or why it did not run
  std::vector<std::string> master_warnings;
  // Both directions of each pair of hosts the matrix covers, sorted by from,
  // then to (find_pair).
  std::vector<PairCheck> pairs;
  // Past kAllPairsUpTo hosts, a sample of the pairs: each host with the hosts
  // these many places after it in the hosts file (pair_schedule.h).
  std::vector<int> sampled_strides = {};
  std::int32_t duration_ms = 0;  // of each bulk transfer
  NcclCheck nccl = {};
  bool interrupted = false;
};

struct CheckWarning {
  std::string host;  // empty: about several hosts
  std::string text;
};

// The pair from -> to in result.pairs; nullptr when the matrix does not cover it.
const PairCheck* find_pair(const CheckResult& result, int from, int to);
PairCheck* find_pair(CheckResult& result, int from, int to);

std::vector<CheckWarning> check_warnings(const CheckResult& result);

// Why a job could not launch on these hosts (empty: it could): hosts down, no
// MASTER_ADDR every node reaches, pairs that cannot connect.
std::vector<std::string> launch_problems(const CheckResult& result);

// 0 when a job could launch, else 1.
int check_exit_code(const CheckResult& result);

// Bits per second delivered in a pair's bulk transfer; 0 when none was measured.
double throughput_bps(const proto::PeerResult& result);

// "64 MiB", "1.5 GiB", "—" for -1.
std::string bytes_text(std::int64_t bytes);
// "9.41 Gb/s", "850 Mb/s".
std::string rate_text(double bits_per_second);
// "+1.2 ms +-300 us", "-1.5 s +-2.1 ms".
std::string skew_text(std::int64_t skew_us, std::int64_t uncertainty_us);

}  // namespace dlaunch
