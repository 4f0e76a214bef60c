#include "agent/nccl_allreduce.h"

#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>

#include "agent/gpu_helper_process.h"

namespace dlaunch {
namespace {

// The helper that created the unique id holds NCCL's bootstrap root, so the
// rank-0 host keeps it until its own test runs in it.
std::mutex g_root_mutex;
std::unique_ptr<GpuHelperProcess> g_root_helper;

std::string to_hex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex;
  for (unsigned char c : bytes) {
    hex.push_back(kDigits[c >> 4]);
    hex.push_back(kDigits[c & 15]);
  }
  return hex;
}

std::string from_hex(std::string_view hex) {
  const auto value = [](char c) { return c <= '9' ? c - '0' : c - 'a' + 10; };
  std::string bytes;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
    bytes.push_back(static_cast<char>(value(hex[i]) * 16 + value(hex[i + 1])));
  return bytes;
}

std::string run_line(const proto::NcclTest& test) {
  std::string sizes;
  for (auto bytes : test.sizes) sizes += (sizes.empty() ? "" : ",") + std::to_string(bytes);
  return "run\t" + std::to_string(test.nranks) + "\t" + std::to_string(test.first_rank) + "\t" +
         std::to_string(test.gpus) + "\t" + std::to_string(test.warmup) + "\t" +
         std::to_string(test.iterations) + "\t" + to_hex(test.unique_id) + "\t" + sizes;
}

// Reads the helper's answer up to `last` ("id" or "done") or an error. Lines
// it does not know (NCCL_DEBUG=INFO writes to stdout) are skipped.
void read_answer(GpuHelperProcess& helper, const std::string& last, proto::NcclReport& report) {
  while (auto line = helper.read_line(std::nullopt)) {
    const auto fields = split_helper_line(*line);
    const std::string& key = fields[0];
    if (key == "error" && fields.size() >= 2) {
      report.error = fields[1];
      return;
    }
    if (key == "version" && fields.size() >= 2) report.version = fields[1];
    if (key == "id" && fields.size() >= 2) report.unique_id = from_hex(fields[1]);
    if (key == "time" && fields.size() >= 3)
      report.timings.push_back({std::strtoll(fields[1].c_str(), nullptr, 10),
                                std::strtoll(fields[2].c_str(), nullptr, 10)});
    if (key == last) return;
  }
  report.error = "the GPU helper ended without an answer (crashed in the CUDA driver or NCCL?)";
}

proto::NcclReport run(const proto::NcclTest& test) {
  proto::NcclReport report;
  std::unique_ptr<GpuHelperProcess> helper;
  {
    std::lock_guard lock(g_root_mutex);
    helper = std::move(g_root_helper);
  }
  if (!helper) {
    std::vector<std::string> env;
    // NCCL reads its settings from the environment when first used; the
    // user's own setting wins.
    if (!test.socket_ifname.empty()) env.push_back("NCCL_SOCKET_IFNAME=" + test.socket_ifname);
    helper = GpuHelperProcess::start("nccl", env, report.error);
    if (!helper) return report;
  }
  if (test.unique_id.empty()) {
    if (!helper->write_line("id")) {
      report.error = "the GPU helper stopped before it gave a unique id";
      return report;
    }
    read_answer(*helper, "id", report);
    if (report.error.empty()) {
      std::lock_guard lock(g_root_mutex);
      g_root_helper = std::move(helper);
    }
    return report;
  }
  // A helper that has already exited still says why, or read_answer does.
  helper->write_line(run_line(test));
  read_answer(*helper, "done", report);
  return report;
}

}  // namespace

void run_nccl_allreduce(asio::io_context& io, const proto::NcclTest& test, NcclDone done) {
  // Detached: a peer that never joins leaves ncclCommInitRank waiting, and
  // the coordinator then ends the check (and this process, whose guardian
  // ends the helper) after its timeout.
  std::thread([&io, test, done = std::move(done)]() mutable {
    auto report = run(test);
    asio::post(io, [done = std::move(done), report = std::move(report)]() mutable {
      done(std::move(report));
    });
  }).detach();
}

}  // namespace dlaunch
