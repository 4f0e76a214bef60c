// What `dlaunch top node` and `dlaunch top job` print, from what was gathered
// (pure, so the layouts are unit-tested; top.cpp gathers).
//
// top node, as Arena's `arena top node`: one row per host (NAME, IPADDRESS,
// ROLE, STATUS, GPU(Total), GPU(Allocated): GPUs a rank of a dlaunch job
// holds), then the cluster line "Allocated/Total GPUs: n/m (p%)";
// with details, a block per host with every GPU's utilization, memory and job.
//
// top job: one row per job (NAME, STATUS, HOSTS, RANKS, GPUS, CPU%, MEMORY of
// its ranks on this machine), then one row per rank process found here (JOB,
// RANK, PID, CPU%, RSS, COMMAND), and a note per job naming the hosts whose
// ranks this machine cannot see.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/rank_usage.h"
#include "launcher/check/check_result.h"
#include "launcher/record/job_store.h"

namespace dlaunch {

// --- top node ---------------------------------------------------------------

// GPUs of a host that a dlaunch job holds.
int allocated_gpus(const proto::HostFacts& facts);
// "3/8 (37%)": the percentage rounded down, 0% of no GPUs.
std::string allocated_text(int allocated, int total);

std::string format_top_node_text(const CheckResult& result, bool details);
// {"hosts": [{name, address, role, status, error, gpus_total, gpus_allocated,
// driver_version, cuda_version, gpus: [{index, name, memory_bytes,
// memory_used_bytes, utilization_pct (null: unknown), job (null: none)}]}],
// "gpus_total", "gpus_allocated", "allocated_pct"}
std::string format_top_node_json(const CheckResult& result);

// --- top job ----------------------------------------------------------------

// What `top job` gathered: the jobs, and their rank processes on this machine
// over the sampling interval (common/rank_usage.h).
struct TopJobs {
  std::vector<Job> jobs;          // the jobs to show, in order
  std::vector<RankSample> ranks;  // every rank process found here
  std::string host_name;          // this machine's (common/this_machine.h)
  double interval_s = 1.0;
  // Ranks found here whose job has no row (another state dir's, or ended):
  // left out of `ranks`, counted, and said in a note.
  std::set<std::string> other_jobs;
  std::string log_dir;
};

// Leaves in `top.ranks` only the ranks of `top.jobs`, noting the other jobs.
void keep_ranks_of_listed_jobs(TopJobs& top);

// A job's row: what its ranks here add up to.
struct JobUsage {
  int processes = 0;        // rank processes found here
  std::optional<int> gpus;  // distinct (host, GPU) of them; nothing when none is here
  double cpu_pct = 0;
  long long rss_bytes = 0;
  std::vector<std::string> other_hosts;  // its hosts that are not this machine
};
JobUsage job_usage(const TopJobs& top, const Job& job);

std::string format_top_job_text(const TopJobs& top);
// {"interval_s", "jobs": [{name, status, hosts: [...], ranks, processes, gpus
// (null: unknown), cpu_pct, memory_bytes, hosts_not_sampled: [...]}],
// "ranks": [{job, rank (null: unset), pid, host, cpu_pct, rss_bytes, gpu
// (null: unknown), command}]}
std::string format_top_job_json(const TopJobs& top);

}  // namespace dlaunch
