#include "launcher/check/check_report.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "common/json.h"
#include "common/text.h"
#include "launcher/check/nccl_report.h"

namespace dlaunch {
namespace {

using Table = std::vector<std::vector<std::string>>;

void print_table(std::ostringstream& out, const Table& rows) {
  std::vector<std::size_t> width;
  for (const auto& row : rows) {
    width.resize(std::max(width.size(), row.size()), 0);
    for (std::size_t k = 0; k < row.size(); ++k) width[k] = std::max(width[k], row[k].size());
  }
  for (const auto& row : rows) {
    std::string line = " ";
    for (std::size_t k = 0; k < row.size(); ++k) {
      line += " " + row[k];
      if (k + 1 < row.size()) line.append(width[k] - row[k].size() + 1, ' ');
    }
    out << line << "\n";
  }
}

std::string ms_text(std::int64_t us) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f ms", static_cast<double>(us) / 1000.0);
  return text;
}

std::string gpus_text(const proto::HostFacts& f) {
  if (f.gpus.empty()) return "none";
  // "8x NVIDIA H100 80GB HBM3" when they are all alike, else the names.
  std::string names;
  const bool alike = std::all_of(f.gpus.begin(), f.gpus.end(),
                                 [&](const proto::GpuFact& g) { return g.name == f.gpus[0].name; });
  if (alike) {
    names = std::to_string(f.gpus.size()) + "x " + f.gpus[0].name;
  } else {
    for (std::size_t i = 0; i < f.gpus.size(); ++i) names += (i ? ", " : "") + f.gpus[i].name;
  }
  return names + " (driver " + (f.driver_version.empty() ? "?" : f.driver_version) + ", CUDA " +
         (f.cuda_version.empty() ? "?" : f.cuda_version) + ")";
}

std::string none_if_empty(const std::string& s) {
  return s.empty() ? "none" : s;
}

std::string pair_cell(const CheckResult& r, const PairCheck* p) {
  if (p == nullptr) return "-";
  if (!p->tested) return "untested";
  if (!p->result.reached) return "BLOCKED (" + p->result.error + ")";
  std::string cell = "ok " + ms_text(p->result.rtt_us);
  const double bps = throughput_bps(p->result);
  if (bps > 0) {
    cell += " " + rate_text(bps);
  } else if (r.duration_ms > 0) {
    cell += " (" + (p->result.error.empty() ? std::string("no transfer") : p->result.error) + ")";
  }
  return cell;
}

// "(connect time, throughput over 0.25 s each way)"
std::string measured_text(const CheckResult& r) {
  std::string text = "(connect time";
  if (r.duration_ms > 0) {
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%.2f s", r.duration_ms / 1000.0);
    text += std::string(", throughput over ") + seconds + " each way";
  }
  return text + ")";
}

void format_full_matrix(std::ostringstream& out, const CheckResult& r) {
  out << "\nmatrix: TCP from each row's host to each column's host on the chosen interfaces "
      << measured_text(r) << "\n";
  Table matrix;
  std::vector<std::string> header{"from \\ to"};
  for (const auto& h : r.hosts)
    header.push_back(h.name + (h.test_address.empty() ? "" : " " + h.test_address));
  matrix.push_back(header);
  for (std::size_t i = 0; i < r.hosts.size(); ++i) {
    std::vector<std::string> row{r.hosts[i].name +
                                 (r.hosts[i].interface.empty() ? "" : " " + r.hosts[i].interface)};
    for (std::size_t j = 0; j < r.hosts.size(); ++j) {
      row.push_back(i == j ? "-"
                           : pair_cell(r, find_pair(r, static_cast<int>(i), static_cast<int>(j))));
    }
    matrix.push_back(std::move(row));
  }
  print_table(out, matrix);
}

// Past kAllPairsUpTo hosts a table of every pair would be unreadable and the
// pairs were sampled: their counts, the slowest, and every one not ok.
void format_sampled_matrix(std::ostringstream& out, const CheckResult& r) {
  std::string strides;
  for (std::size_t i = 0; i < r.sampled_strides.size(); ++i)
    strides += (i ? ", " : "") + std::to_string(r.sampled_strides[i]);
  const std::size_t n = r.hosts.size();
  out << "\nmatrix: TCP between each host and the hosts " << strides
      << (r.sampled_strides.size() == 1 && r.sampled_strides[0] == 1 ? " place" : " places")
      << " after it in the host list, both ways, on the chosen interfaces " << measured_text(r)
      << ": " << grouped(r.pairs.size()) << " of the " << grouped(n * (n - 1))
      << " ordered pairs (--matrix-pairs all tests every one)\n";
  std::vector<const PairCheck*> ok, not_ok;
  for (const auto& p : r.pairs) (p.tested && p.result.reached ? ok : not_ok).push_back(&p);
  out << "  " << grouped(ok.size()) << " ok, " << grouped(not_ok.size()) << " not\n";
  const auto row = [&](const PairCheck* p) {
    return std::vector<std::string>{r.hosts[static_cast<std::size_t>(p->from)].name,
                                    r.hosts[static_cast<std::size_t>(p->to)].name + " " +
                                        r.hosts[static_cast<std::size_t>(p->to)].test_address,
                                    pair_cell(r, p)};
  };
  constexpr std::size_t kRows = 20;
  if (!not_ok.empty()) {
    Table failed{{"from", "to", "result"}};
    for (std::size_t i = 0; i < std::min(kRows, not_ok.size()); ++i)
      failed.push_back(row(not_ok[i]));
    print_table(out, failed);
    if (not_ok.size() > kRows) out << "  and " << grouped(not_ok.size() - kRows) << " more\n";
  }
  if (ok.empty()) return;
  // The slowest: by throughput where measured, else by connect time.
  std::sort(ok.begin(), ok.end(), [&](const PairCheck* a, const PairCheck* b) {
    const double ta = throughput_bps(a->result), tb = throughput_bps(b->result);
    if (ta != tb) return ta < tb;
    return a->result.rtt_us > b->result.rtt_us;
  });
  out << "  the slowest:\n";
  Table slow{{"from", "to", "result"}};
  for (std::size_t i = 0; i < std::min<std::size_t>(5, ok.size()); ++i) slow.push_back(row(ok[i]));
  print_table(out, slow);
}

}  // namespace

std::string format_check_text(const CheckResult& r) {
  std::ostringstream out;
  const auto warnings = check_warnings(r);
  std::size_t up = 0;
  for (const auto& h : r.hosts) up += h.up ? 1 : 0;
  out << "hosts: " << up << " of " << r.hosts.size() << " up\n";
  Table hosts{{"host", "address", "status", "agent", "os", "kernel", "arch", "libc", "cpus", "gpus",
               "home free", "/tmp free", "/dev/shm", "clock skew", "python", "torch",
               "containers"}};
  // Columns only a check with --image or --sync-git fills.
  bool images = false;
  bool code = false;
  for (const auto& h : r.hosts) {
    images = images || (h.facts && !h.facts->image_id.empty());
    code = code || (h.facts && !h.facts->git_commit.empty());
  }
  if (images) hosts.front().push_back("image");
  if (code) hosts.front().push_back("code");
  for (const auto& h : r.hosts) {
    if (!h.facts) {
      hosts.push_back({h.name, h.address, h.up ? "up" : "DOWN"});
      continue;
    }
    const auto& f = *h.facts;
    std::string shm = bytes_text(f.shm_size);
    if (f.shm_size >= 0 && f.shm_size < kMinShmBytes) shm += " (!)";
    // The agent is static, one per architecture: its own says which was used.
    const std::string agent =
        f.agent_arch.empty() ? f.agent_version : f.agent_version + " " + f.agent_arch;
    hosts.push_back({h.name, h.address, h.up ? "ok" : "DOWN", agent, f.os.empty() ? "?" : f.os,
                     f.kernel, none_if_empty(f.arch), none_if_empty(f.libc), std::to_string(f.cpus),
                     gpus_text(f), bytes_text(f.home_free), bytes_text(f.tmp_free), shm,
                     h.clock_skew_us ? skew_text(*h.clock_skew_us, h.clock_uncertainty_us) : "?",
                     none_if_empty(f.python_version), none_if_empty(f.torch_version),
                     none_if_empty(f.container_engine)});
    // An image ID and a commit are long; their first 12 characters tell them apart.
    if (images) hosts.back().push_back(none_if_empty(f.image_id.substr(0, 19)));
    if (code) hosts.back().push_back(none_if_empty(f.git_commit.substr(0, 12)));
  }
  print_table(out, hosts);
  for (const auto& h : r.hosts) {
    if (!h.up) out << "  " << h.name << ": " << h.error << "\n";
  }
  if (!warnings.empty()) {
    out << "warnings:\n";
    for (const auto& w : warnings)
      out << "  " << (w.host.empty() ? "" : w.host + ": ") << w.text << "\n";
  }
  out << "\n" << r.master_report;
  if (!r.master_report.empty() && r.master_report.back() != '\n') out << "\n";
  if (!r.sampled_strides.empty()) {
    format_sampled_matrix(out, r);
  } else {
    format_full_matrix(out, r);
  }
  if (r.nccl.requested) out << "\n" << format_nccl_text(r.nccl);
  const auto problems = launch_problems(r);
  if (problems.empty()) {
    out << "\nresult: a job can launch on "
        << (r.hosts.size() == 1 ? std::string("this host")
                                : "these " + std::to_string(r.hosts.size()) + " hosts")
        << "\n";
  } else {
    out << "\nresult: a job could not launch on these hosts:\n";
    for (const auto& p : problems) out << "  " << p << "\n";
  }
  return out.str();
}

std::string format_check_json(const CheckResult& r) {
  JsonWriter j;
  const auto warnings = check_warnings(r);
  const auto problems = launch_problems(r);
  j.begin_object();
  j.key("ok").value(problems.empty());
  j.key("hosts").begin_array();
  for (const auto& h : r.hosts) {
    j.begin_object();
    j.key("name").value(h.name);
    j.key("address").value(h.address);
    j.key("up").value(h.up);
    if (h.up) {
      j.key("error").null();
    } else {
      j.key("error").value(h.error);
    }
    j.key("interface").value(h.interface);
    j.key("test_address").value(h.test_address);
    if (h.facts) {
      const auto& f = *h.facts;
      j.key("agent_version").value(f.agent_version);
      j.key("os").value(f.os);
      j.key("agent_arch").value(f.agent_arch);
      j.key("kernel").value(f.kernel);
      j.key("arch").value(f.arch);
      j.key("libc").value(f.libc);
      j.key("cpus").value(f.cpus);
      j.key("gpus").begin_array();
      for (const auto& g : f.gpus) {
        j.begin_object().key("name").value(g.name);
        j.key("memory_bytes").value(static_cast<std::uint64_t>(g.memory_bytes)).end_object();
      }
      j.end_array();
      j.key("driver_version").value(f.driver_version);
      j.key("cuda_version").value(f.cuda_version);
      j.key("home_free_bytes").value(static_cast<std::int64_t>(f.home_free));
      j.key("tmp_free_bytes").value(static_cast<std::int64_t>(f.tmp_free));
      j.key("shm_bytes").value(static_cast<std::int64_t>(f.shm_size));
      j.key("python").value(f.python_version);
      j.key("torch").value(f.torch_version);
      j.key("python_path").value(f.python_path);
      j.key("container_engine").value(f.container_engine);
      j.key("image_id").value(f.image_id);
      j.key("git_commit").value(f.git_commit);
    }
    if (h.clock_skew_us) {
      j.key("clock_skew_us").value(static_cast<std::int64_t>(*h.clock_skew_us));
      j.key("clock_skew_uncertainty_us").value(static_cast<std::int64_t>(h.clock_uncertainty_us));
    }
    j.key("warnings").begin_array();
    for (const auto& w : warnings) {
      if (w.host == h.name) j.value(w.text);
    }
    j.end_array();
    j.end_object();
  }
  j.end_array();
  j.key("warnings").begin_array();
  for (const auto& w : warnings) j.value((w.host.empty() ? "" : w.host + ": ") + w.text);
  j.end_array();
  j.key("master").begin_object();
  j.key("chosen").value(r.master_chosen);
  if (r.master_chosen) {
    j.key("address").value(r.master_addr);
  } else {
    j.key("address").null();
  }
  j.key("report").value(r.master_report);
  j.end_object();
  j.key("transfer_ms").value(r.duration_ms);
  // "all", or "sampled" with the strides (--matrix-pairs); "matrix" holds the
  // pairs tested either way.
  j.key("matrix_pairs").value(r.sampled_strides.empty() ? "all" : "sampled");
  if (!r.sampled_strides.empty()) {
    j.key("matrix_strides").begin_array();
    for (int stride : r.sampled_strides) j.value(static_cast<std::int64_t>(stride));
    j.end_array();
  }
  j.key("matrix").begin_array();
  for (const auto& p : r.pairs) {
    j.begin_object();
    j.key("from").value(r.hosts[static_cast<std::size_t>(p.from)].name);
    j.key("to").value(r.hosts[static_cast<std::size_t>(p.to)].name);
    j.key("address").value(r.hosts[static_cast<std::size_t>(p.to)].test_address);
    j.key("tested").value(p.tested);
    j.key("reached").value(p.tested && p.result.reached);
    if (p.tested && p.result.reached) {
      j.key("rtt_us").value(static_cast<std::int64_t>(p.result.rtt_us));
      j.key("bytes").value(static_cast<std::uint64_t>(p.result.bytes));
      j.key("bits_per_second").value(throughput_bps(p.result));
    }
    const std::string error = p.tested ? p.result.error : p.untested;
    if (error.empty()) {
      j.key("error").null();
    } else {
      j.key("error").value(error);
    }
    j.end_object();
  }
  j.end_array();
  if (r.nccl.requested) {
    j.key("nccl").begin_object();
    j.key("gpus").value(r.nccl.gpus);
    j.key("hosts").value(r.nccl.hosts);
    j.key("version").value(r.nccl.version);
    j.key("iterations").value(r.nccl.iterations);
    j.key("ran").value(r.nccl.skipped.empty() && r.nccl.error.empty());
    if (r.nccl.skipped.empty()) {
      j.key("skipped").null();
    } else {
      j.key("skipped").value(r.nccl.skipped);
    }
    if (r.nccl.error.empty()) {
      j.key("error").null();
    } else {
      j.key("error").value(r.nccl.error);
    }
    j.key("results").begin_array();
    for (const auto& t : r.nccl.timings) {
      const auto row = nccl_row(t, r.nccl.gpus);
      j.begin_object();
      j.key("bytes").value(static_cast<std::int64_t>(row.bytes));
      j.key("count").value(static_cast<std::int64_t>(row.count));
      j.key("time_us").value(row.time_us);
      j.key("algbw_gbs").value(row.algbw_gbs);
      j.key("busbw_gbs").value(row.busbw_gbs);
      j.end_object();
    }
    j.end_array();
    j.end_object();
  }
  j.key("problems").begin_array();
  for (const auto& p : problems) j.value(p);
  j.end_array();
  j.end_object();
  return j.text() + "\n";
}

}  // namespace dlaunch
