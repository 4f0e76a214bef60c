#include "launcher/cli/top_view.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <sstream>

#include "common/json.h"
#include "common/this_machine.h"
#include "launcher/cli/job_text.h"
#include "launcher/cli/job_view.h"

namespace dlaunch {
namespace {

// Arena's separator line, as wide as its.
const std::string kRule(89, '-');

// Columns padded to the widest cell, two spaces apart (as Go's tabwriter in
// Arena); the last column is not padded.
std::string table(const std::vector<std::vector<std::string>>& rows,
                  const std::string& indent = "") {
  std::vector<std::size_t> width;
  for (const auto& row : rows) {
    if (width.size() < row.size()) width.resize(row.size(), 0);
    for (std::size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line = indent;
    for (std::size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(width[i] - row[i].size() + 2, ' ');
    }
    out += line + "\n";
  }
  return out;
}

int total_gpus(const HostCheck& h) {
  return h.facts ? static_cast<int>(h.facts->gpus.size()) : 0;
}

std::string role(std::size_t node) {
  // Node 0 would hold MASTER_ADDR in a job over these hosts.
  return node == 0 ? "master" : "worker";
}

std::string status(const HostCheck& h) {
  return h.up ? "ready" : "notready";
}

std::string percent_text(std::int32_t pct) {
  return pct < 0 ? "-" : std::to_string(pct) + "%";
}

std::string memory_text(const proto::GpuFact& g) {
  return bytes_text(static_cast<std::int64_t>(g.memory_used_bytes)) + "/" +
         bytes_text(static_cast<std::int64_t>(g.memory_bytes));
}

void cluster_total(std::ostringstream& out, const CheckResult& result) {
  int total = 0, allocated = 0;
  for (const auto& h : result.hosts) {
    total += total_gpus(h);
    if (h.facts) allocated += allocated_gpus(*h.facts);
  }
  out << kRule << "\n"
      << "Allocated/Total GPUs: " << allocated_text(allocated, total) << "\n";
}

void notready_notes(std::ostringstream& out, const CheckResult& result) {
  bool first = true;
  for (const auto& h : result.hosts) {
    if (h.up) continue;
    if (first) out << "\n";
    first = false;
    // Transports' errors name the host already.
    out << "notready: " << (h.error.starts_with(h.name + ":") ? "" : h.name + ": ") << h.error
        << "\n";
  }
}

std::optional<long long> rank_number(const std::string& text) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  const long long n = std::strtoll(text.c_str(), &end, 10);
  if (*end != '\0') return std::nullopt;
  return n;
}

// The DLAUNCH_JOB its ranks carry: a manual-mode node's own record names its job.
std::string ranks_job(const Job& job) {
  return job.info.node_of_job.empty() ? job.info.name : job.info.node_of_job;
}

bool is_here(const TopJobs& top, const Job& job, const std::string& host) {
  // A record's host without a name cannot be told elsewhere: it counts as here.
  if (job.info.mode == "standalone" || host.empty() || is_this_host_name(host, top.host_name))
    return true;
  // A rank of the job found here that says it runs on `host`.
  return std::any_of(top.ranks.begin(), top.ranks.end(), [&](const RankSample& r) {
    return r.job == ranks_job(job) && r.host == host;
  });
}

std::vector<const RankSample*> sorted_ranks(const TopJobs& top) {
  std::vector<const RankSample*> out;
  for (const auto& r : top.ranks) out.push_back(&r);
  std::stable_sort(out.begin(), out.end(), [](const RankSample* a, const RankSample* b) {
    if (a->job != b->job) return a->job < b->job;
    const auto ra = rank_number(a->rank).value_or(-1), rb = rank_number(b->rank).value_or(-1);
    if (ra != rb) return ra < rb;
    return a->pid < b->pid;
  });
  return out;
}

std::string cpu_text(double pct) {
  return formatted("%.1f", pct);
}

}  // namespace

int allocated_gpus(const proto::HostFacts& facts) {
  return static_cast<int>(std::count_if(facts.gpus.begin(), facts.gpus.end(),
                                        [](const auto& g) { return !g.held_by_job.empty(); }));
}

std::string allocated_text(int allocated, int total) {
  const int pct = total > 0 ? allocated * 100 / total : 0;
  return std::to_string(allocated) + "/" + std::to_string(total) + " (" + std::to_string(pct) +
         "%)";
}

std::string format_top_node_text(const CheckResult& result, bool details) {
  std::ostringstream out;
  if (!details) {
    std::vector<std::vector<std::string>> rows = {
        {"NAME", "IPADDRESS", "ROLE", "STATUS", "GPU(Total)", "GPU(Allocated)"}};
    for (std::size_t i = 0; i < result.hosts.size(); ++i) {
      const auto& h = result.hosts[i];
      rows.push_back({h.name, h.address, role(i), status(h),
                      h.facts ? std::to_string(total_gpus(h)) : "-",
                      h.facts ? std::to_string(allocated_gpus(*h.facts)) : "-"});
    }
    out << table(rows);
  } else {
    for (std::size_t i = 0; i < result.hosts.size(); ++i) {
      const auto& h = result.hosts[i];
      std::vector<std::vector<std::string>> head = {
          {"NAME:", h.name}, {"IPADDRESS:", h.address}, {"ROLE:", role(i)}, {"STATUS:", status(h)}};
      if (!h.up) head.push_back({"REASON:", h.error});
      if (h.facts && !h.facts->driver_version.empty())
        head.push_back(
            {"DRIVER:",
             h.facts->driver_version +
                 (h.facts->cuda_version.empty() ? "" : " (CUDA " + h.facts->cuda_version + ")")});
      out << table(head);
      if (h.facts) {
        const int total = total_gpus(h), allocated = allocated_gpus(*h.facts);
        out << "\n"
            << table({{"Total GPUs In Node " + h.name + ":", std::to_string(total)},
                      {"Allocated GPUs In Node " + h.name + ":",
                       std::to_string(allocated) + " (" +
                           std::to_string(total > 0 ? allocated * 100 / total : 0) + "%)"}});
        if (total > 0) {
          std::vector<std::vector<std::string>> gpus = {
              {"INDEX", "NAME", "UTIL", "MEMORY(Used/Total)", "JOB"}};
          for (std::size_t g = 0; g < h.facts->gpus.size(); ++g) {
            const auto& gpu = h.facts->gpus[g];
            gpus.push_back({std::to_string(g), gpu.name.empty() ? "-" : gpu.name,
                            percent_text(gpu.utilization_pct), memory_text(gpu),
                            gpu.held_by_job.empty() ? "-" : gpu.held_by_job});
          }
          out << "\n" << table(gpus, "  ");
        }
      }
      out << kRule << "\n";
    }
    // The cluster's lines follow the last host's rule.
    int total = 0, allocated = 0;
    for (const auto& h : result.hosts) {
      total += total_gpus(h);
      if (h.facts) allocated += allocated_gpus(*h.facts);
    }
    out << "Allocated/Total GPUs: " << allocated_text(allocated, total) << "\n";
    notready_notes(out, result);
    return out.str();
  }
  cluster_total(out, result);
  notready_notes(out, result);
  return out.str();
}

std::string format_top_node_json(const CheckResult& result) {
  JsonWriter j;
  int total = 0, allocated = 0;
  j.begin_object();
  j.key("hosts").begin_array();
  for (std::size_t i = 0; i < result.hosts.size(); ++i) {
    const auto& h = result.hosts[i];
    const int host_total = total_gpus(h);
    const int host_allocated = h.facts ? allocated_gpus(*h.facts) : 0;
    total += host_total;
    allocated += host_allocated;
    j.begin_object();
    j.key("name").value(h.name);
    j.key("address").value(h.address);
    j.key("role").value(role(i));
    j.key("status").value(status(h));
    j.key("error").value(h.up ? std::string() : h.error);
    j.key("gpus_total").value(host_total);
    j.key("gpus_allocated").value(host_allocated);
    j.key("driver_version").value(h.facts ? h.facts->driver_version : std::string());
    j.key("cuda_version").value(h.facts ? h.facts->cuda_version : std::string());
    j.key("gpus").begin_array();
    if (h.facts) {
      for (std::size_t g = 0; g < h.facts->gpus.size(); ++g) {
        const auto& gpu = h.facts->gpus[g];
        j.begin_object();
        j.key("index").value(static_cast<int>(g));
        j.key("name").value(gpu.name);
        j.key("memory_bytes").value(static_cast<std::uint64_t>(gpu.memory_bytes));
        j.key("memory_used_bytes").value(static_cast<std::uint64_t>(gpu.memory_used_bytes));
        j.key("utilization_pct");
        if (gpu.utilization_pct >= 0) {
          j.value(static_cast<int>(gpu.utilization_pct));
        } else {
          j.null();
        }
        j.key("job");
        if (gpu.held_by_job.empty()) {
          j.null();
        } else {
          j.value(gpu.held_by_job);
        }
        j.end_object();
      }
    }
    j.end_array();
    j.end_object();
  }
  j.end_array();
  j.key("gpus_total").value(total);
  j.key("gpus_allocated").value(allocated);
  j.key("allocated_pct").value(total > 0 ? allocated * 100 / total : 0);
  j.end_object();
  return j.text() + "\n";
}

JobUsage job_usage(const TopJobs& top, const Job& job) {
  JobUsage u;
  std::set<std::pair<std::string, int>> gpus;
  for (const auto& r : top.ranks) {
    if (r.job != ranks_job(job)) continue;
    ++u.processes;
    u.cpu_pct += r.cpu_pct;
    u.rss_bytes += r.rss_bytes;
    if (r.gpu) gpus.insert({r.host, *r.gpu});
  }
  if (u.processes > 0) u.gpus = static_cast<int>(gpus.size());
  for (const auto& host : job.info.hosts) {
    if (!is_here(top, job, host) &&
        std::find(u.other_hosts.begin(), u.other_hosts.end(), host) == u.other_hosts.end())
      u.other_hosts.push_back(host);
  }
  return u;
}

void keep_ranks_of_listed_jobs(TopJobs& top) {
  std::set<std::string> listed;
  for (const auto& job : top.jobs) listed.insert(ranks_job(job));
  std::erase_if(top.ranks, [&](const RankSample& r) {
    if (listed.contains(r.job)) return false;
    top.other_jobs.insert(r.job);
    return true;
  });
}

std::string format_top_job_text(const TopJobs& top) {
  std::ostringstream out;
  std::vector<std::string> notes;
  if (top.jobs.empty()) {
    out << "no running jobs\n";
  } else {
    std::vector<std::vector<std::string>> rows = {
        {"NAME", "STATUS", "HOSTS", "RANKS", "GPUS", "CPU%", "MEMORY"}};
    for (const auto& job : top.jobs) {
      const auto u = job_usage(top, job);
      const int ranks = job_ranks(job);
      rows.push_back(
          {job.info.name, std::string(job_status_name(job.status)),
           std::to_string(job.info.hosts.size()), ranks > 0 ? std::to_string(ranks) : "-",
           u.gpus ? std::to_string(*u.gpus) : "-", u.processes ? cpu_text(u.cpu_pct) : "-",
           u.processes ? bytes_text(u.rss_bytes) : "-"});
      if (is_active(job.status) && !u.other_hosts.empty()) {
        std::string hosts;
        for (const auto& h : u.other_hosts) hosts += (hosts.empty() ? "" : ", ") + h;
        notes.push_back("(" + job.info.name + ": ranks on other hosts are not sampled: " + hosts +
                        ")");
      }
    }
    out << table(rows);
  }
  out << "\n";
  if (top.ranks.empty()) {
    out << "no ranks of any dlaunch job on this machine\n";
  } else {
    out << formatted("%-28s  %4s  %7s  %6s  %9s  %s\n", "JOB", "RANK", "PID", "CPU%", "RSS MiB",
                     "COMMAND");
    for (const auto* r : sorted_ranks(top)) {
      out << formatted("%-28s  %4s  %7d  %6.1f  %9.1f  %s\n", r->job.c_str(),
                       r->rank.empty() ? "-" : r->rank.c_str(), r->pid, r->cpu_pct,
                       static_cast<double>(r->rss_bytes) / (1024.0 * 1024.0), r->command.c_str());
    }
  }
  if (!top.other_jobs.empty()) {
    std::string names;
    for (const auto& n : top.other_jobs) names += (names.empty() ? "" : ", ") + n;
    notes.push_back("(ranks of jobs not running in " + top.log_dir + " are not shown: " + names +
                    "; --log-dir or DLAUNCH_STATE_DIR names another state dir)");
  }
  if (!notes.empty()) {
    out << "\n";
    for (const auto& n : notes) out << n << "\n";
  }
  return out.str();
}

std::string format_top_job_json(const TopJobs& top) {
  JsonWriter j;
  j.begin_object();
  j.key("interval_s").value(top.interval_s);
  j.key("jobs").begin_array();
  for (const auto& job : top.jobs) {
    const auto u = job_usage(top, job);
    j.begin_object();
    j.key("name").value(job.info.name);
    j.key("status").value(job_status_name(job.status));
    j.key("hosts").begin_array();
    for (const auto& h : job.info.hosts) j.value(h);
    j.end_array();
    j.key("ranks").value(job_ranks(job));
    j.key("processes").value(u.processes);
    j.key("gpus");
    if (u.gpus) {
      j.value(*u.gpus);
    } else {
      j.null();
    }
    j.key("cpu_pct").value(u.cpu_pct);
    j.key("memory_bytes").value(static_cast<std::int64_t>(u.rss_bytes));
    j.key("hosts_not_sampled").begin_array();
    for (const auto& h : u.other_hosts) j.value(h);
    j.end_array();
    j.end_object();
  }
  j.end_array();
  j.key("ranks").begin_array();
  for (const auto* r : sorted_ranks(top)) {
    j.begin_object();
    j.key("job").value(r->job);
    j.key("rank");
    if (const auto n = rank_number(r->rank)) {
      j.value(static_cast<std::int64_t>(*n));
    } else {
      j.null();
    }
    j.key("pid").value(r->pid);
    j.key("host").value(r->host);
    j.key("cpu_pct").value(r->cpu_pct);
    j.key("rss_bytes").value(static_cast<std::int64_t>(r->rss_bytes));
    j.key("gpu");
    if (r->gpu) {
      j.value(*r->gpu);
    } else {
      j.null();
    }
    j.key("command").value(r->command);
    j.end_object();
  }
  j.end_array();
  j.end_object();
  return j.text() + "\n";
}

}  // namespace dlaunch
