#include "common/gpu_holders.h"

#include <charconv>
#include <cstdlib>
#include <fstream>
#include <iterator>

#include "common/posix.h"

namespace dlaunch {
namespace {

std::optional<int> parse_index(std::string_view text) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  int value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

std::vector<std::string_view> split_commas(std::string_view list) {
  std::vector<std::string_view> out;
  while (true) {
    const auto comma = list.find(',');
    out.push_back(list.substr(0, comma));
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return out;
}

}  // namespace

RankEnvironment parse_rank_environment(std::string_view block) {
  RankEnvironment env;
  while (!block.empty()) {
    const auto nul = block.find('\0');
    const std::string_view var = block.substr(0, nul);
    block.remove_prefix(nul == std::string_view::npos ? block.size() : nul + 1);
    const auto eq = var.find('=');
    if (eq == std::string_view::npos) continue;
    const std::string_view name = var.substr(0, eq);
    const std::string_view value = var.substr(eq + 1);
    if (name == "DLAUNCH_JOB") {
      env.job = value;
    } else if (name == "RANK") {
      env.rank = value;
    } else if (name == "DLAUNCH_HOST") {
      env.host = value;
    } else if (name == "CUDA_VISIBLE_DEVICES") {
      env.cuda_visible_devices = std::string(value);
    } else if (name == "LOCAL_RANK") {
      env.local_rank = parse_index(value);
    }
  }
  return env;
}

std::optional<int> rank_gpu(const RankEnvironment& rank, int host_gpus) {
  if (host_gpus <= 0) return std::nullopt;
  std::optional<int> gpu;
  if (rank.cuda_visible_devices) {
    const std::string_view list = *rank.cuda_visible_devices;
    if (list.empty()) return std::nullopt;  // no GPU at all for this process
    const auto entries = split_commas(list);
    if (entries.size() == 1) {
      gpu = parse_index(entries[0]);
    } else if (rank.local_rank && *rank.local_rank >= 0 &&
               static_cast<std::size_t>(*rank.local_rank) < entries.size()) {
      gpu = parse_index(entries[static_cast<std::size_t>(*rank.local_rank)]);
    }
  } else {
    gpu = rank.local_rank;
  }
  if (!gpu || *gpu < 0 || *gpu >= host_gpus) return std::nullopt;
  return gpu;
}

std::map<int, std::string> gpu_holders(const std::vector<RankEnvironment>& ranks, int host_gpus) {
  std::map<int, std::string> out;
  for (const auto& r : ranks) {
    if (r.job.empty()) continue;
    if (const auto gpu = rank_gpu(r, host_gpus)) out.emplace(*gpu, r.job);
  }
  return out;
}

std::vector<RankEnvironment> dlaunch_ranks_here() {
  std::vector<RankEnvironment> out;
  for (const pid_t pid : process_ids()) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/environ", std::ios::binary);
    if (!in) continue;
    const std::string block{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    auto env = parse_rank_environment(block);
    if (env.job.empty()) continue;
    env.pid = static_cast<int>(pid);
    out.push_back(std::move(env));
  }
  return out;
}

}  // namespace dlaunch
