#include "launcher/check/check_result.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <utility>

namespace dlaunch {
namespace {

std::string fixed(double v, int digits) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", digits, v);
  return text;
}

std::string version_or_none(const std::string& v) {
  return v.empty() ? "none" : v;
}

// "python differs between hosts: 3.11.2 on h0, h1; 3.10.12 on h2"
constexpr const char* kUnpickleRisk =
    " (ranks that unpickle each other's objects or load each other's checkpoints can fail)";

void differing(const CheckResult& result, const char* what,
               std::string (*pick)(const proto::HostFacts&), std::vector<CheckWarning>& out,
               const char* why = kUnpickleRisk) {
  std::map<std::string, std::vector<std::string>> hosts_by_version;
  for (const auto& h : result.hosts) {
    // Empty: the host was not asked (a fact only some hosts have).
    if (h.facts && !pick(*h.facts).empty()) hosts_by_version[pick(*h.facts)].push_back(h.name);
  }
  if (hosts_by_version.size() < 2) return;
  std::string text = std::string(what) + " differs between hosts:";
  bool first = true;
  for (const auto& [version, hosts] : hosts_by_version) {
    text += first ? " " : "; ";
    first = false;
    text += version + " on ";
    for (std::size_t i = 0; i < hosts.size() && i < 5; ++i) text += (i ? ", " : "") + hosts[i];
    if (hosts.size() > 5) text += " and " + std::to_string(hosts.size() - 5) + " more";
  }
  text += why;
  out.push_back({"", text});
}

}  // namespace

double throughput_bps(const proto::PeerResult& result) {
  if (!result.reached || result.elapsed_us <= 0 || result.bytes == 0) return 0;
  return static_cast<double>(result.bytes) * 8.0 * 1e6 / static_cast<double>(result.elapsed_us);
}

std::string bytes_text(std::int64_t bytes) {
  if (bytes < 0) return "?";
  const double b = static_cast<double>(bytes);
  if (bytes >= (1LL << 40)) return fixed(b / static_cast<double>(1LL << 40), 1) + " TiB";
  if (bytes >= (1LL << 30)) return fixed(b / static_cast<double>(1LL << 30), 1) + " GiB";
  if (bytes >= (1LL << 20)) return fixed(b / static_cast<double>(1LL << 20), 0) + " MiB";
  if (bytes >= (1LL << 10)) return fixed(b / 1024.0, 0) + " KiB";
  return std::to_string(bytes) + " B";
}

std::string rate_text(double bps) {
  if (bps >= 1e9) return fixed(bps / 1e9, 2) + " Gb/s";
  if (bps >= 1e6) return fixed(bps / 1e6, 0) + " Mb/s";
  if (bps >= 1e3) return fixed(bps / 1e3, 0) + " kb/s";
  return fixed(bps, 0) + " b/s";
}

std::string skew_text(std::int64_t skew_us, std::int64_t uncertainty_us) {
  auto ms = [](std::int64_t us) {
    if (us < 1000) return std::to_string(us) + " us";  // same host, or a LAN
    const double v = static_cast<double>(us) / 1000.0;
    return v >= 1000 ? fixed(v / 1000.0, 1) + " s" : fixed(v, 1) + " ms";
  };
  return (skew_us >= 0 ? "+" : "-") + ms(skew_us >= 0 ? skew_us : -skew_us) + " +-" +
         ms(uncertainty_us);
}

const PairCheck* find_pair(const CheckResult& result, int from, int to) {
  const auto it = std::lower_bound(result.pairs.begin(), result.pairs.end(), std::pair{from, to},
                                   [](const PairCheck& p, const std::pair<int, int>& key) {
                                     return std::pair{p.from, p.to} < key;
                                   });
  return it != result.pairs.end() && it->from == from && it->to == to ? &*it : nullptr;
}

PairCheck* find_pair(CheckResult& result, int from, int to) {
  return const_cast<PairCheck*>(find_pair(std::as_const(result), from, to));
}

std::vector<CheckWarning> check_warnings(const CheckResult& result) {
  std::vector<CheckWarning> out;
  for (const auto& h : result.hosts) {
    if (!h.facts) continue;
    const auto& f = *h.facts;
    if (f.shm_size >= 0 && f.shm_size < kMinShmBytes) {
      out.push_back(
          {h.name, "/dev/shm is " + bytes_text(f.shm_size) +
                       " (under 1 GiB): PyTorch DataLoader workers pass batches "
                       "through it and die with SIGBUS (bus error) when it fills; "
                       "mount a larger tmpfs there (containers: --shm-size or --ipc=host)"});
    }
    if (h.clock_skew_us &&
        std::llabs(*h.clock_skew_us) - h.clock_uncertainty_us > kMaxClockSkewUs) {
      out.push_back({h.name, "its clock is off by " +
                                 skew_text(*h.clock_skew_us, h.clock_uncertainty_us) +
                                 " from this machine's: log times will not line up (run "
                                 "chrony or systemd-timesyncd)"});
    }
    if (f.python_version.empty()) {
      out.push_back({h.name, "no python3 on the PATH of a non-interactive SSH login"});
    } else if (f.torch_version.empty()) {
      // `torch none` alone sent users looking for a missing package that was
      // installed, for another python3 than the one a login finds first.
      out.push_back({h.name, "torch is not importable by " +
                                 (f.python_path.empty() ? std::string("python3") : f.python_path) +
                                 " (python " + f.python_version +
                                 "), the first python3 on the PATH of a non-interactive SSH "
                                 "login; a rank that runs another python (/usr/bin/python3, a "
                                 "virtualenv's) may still have it"});
    }
  }
  differing(
      result, "python3",
      [](const proto::HostFacts& f) { return version_or_none(f.python_version); }, out);
  differing(
      result, "torch", [](const proto::HostFacts& f) { return version_or_none(f.torch_version); },
      out);
  for (const auto& h : result.hosts) {
    if (!h.facts) continue;
    if (h.facts->image_id == "absent")
      out.push_back({h.name,
                     "the image is not there: a job pulls it first (or fails where it "
                     "cannot pull)"});
    if (h.facts->git_commit == "none")
      out.push_back({h.name, "no checkout of the --sync-git repository yet: a job clones it"});
  }
  differing(
      result, "the image", [](const proto::HostFacts& f) { return f.image_id; }, out,
      " (ranks of one job would run different software)");
  differing(
      result, "the --sync-git checkout", [](const proto::HostFacts& f) { return f.git_commit; },
      out, " (a job checks out one commit everywhere before its ranks start)");
  for (const auto& w : result.master_warnings) out.push_back({"", w});
  return out;
}

std::vector<std::string> launch_problems(const CheckResult& result) {
  std::vector<std::string> out;
  for (const auto& h : result.hosts) {
    if (!h.up) out.push_back(h.name + " is not up: " + h.error);
  }
  if (result.interrupted) out.push_back("interrupted");
  if (!result.master_chosen) out.push_back("no MASTER_ADDR that every host reaches");
  std::size_t blocked = 0;
  std::string first;
  for (const auto& p : result.pairs) {
    if (p.tested && p.result.reached) continue;
    // Pairs with a host that is down are counted under that host already.
    const auto& from = result.hosts[static_cast<std::size_t>(p.from)];
    const auto& to = result.hosts[static_cast<std::size_t>(p.to)];
    if (!from.up || !to.up) continue;
    if (blocked++ < 10) {
      out.push_back(from.name + " -> " + to.name + " (" + to.test_address +
                    "): " + (p.tested ? p.result.error : p.untested));
    }
  }
  if (blocked > 10) out.push_back("and " + std::to_string(blocked - 10) + " more pairs");
  if (result.nccl.requested && !result.nccl.error.empty())
    out.push_back("the NCCL all-reduce failed: " + result.nccl.error);
  return out;
}

int check_exit_code(const CheckResult& result) {
  return launch_problems(result).empty() ? 0 : 1;
}

}  // namespace dlaunch
