#include "launcher/web/job_metrics.h"

#include <prometheus/metric_family.h>
#include <prometheus/text_serializer.h>
#include <sys/stat.h>

#include <algorithm>
#include <map>

#include "common/text.h"
#include "launcher/cli/job_view.h"

namespace dlaunch {
namespace {

constexpr long long kShownForS = 24 * 3600;

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

constexpr JobStatus kEveryStatus[] = {
    JobStatus::pending, JobStatus::running,   JobStatus::restarting,
    JobStatus::stalled, JobStatus::succeeded, JobStatus::failed,
    JobStatus::stopped, JobStatus::hung,      JobStatus::lost};

bool shown(const Job& job, long long now) {
  if (is_active(job.status) || job.status == JobStatus::stalled) return true;
  const long long end = job.result ? job.result->finished : job.info.started;
  return now - end < kShownForS;
}

// One family of gauges (or counters) with a sample per label set.
class Family {
 public:
  Family(std::string name, std::string help, MetricType type = MetricType::Gauge) {
    f_.name = std::move(name);
    f_.help = std::move(help);
    f_.type = type;
  }
  void add(std::vector<ClientMetric::Label> labels, double value) {
    ClientMetric m;
    m.label = std::move(labels);
    if (f_.type == MetricType::Counter) {
      m.counter.value = value;
    } else {
      m.gauge.value = value;
    }
    f_.metric.push_back(std::move(m));
  }
  MetricFamily take() { return std::move(f_); }

 private:
  MetricFamily f_;
};

}  // namespace

long long last_rank_output(const Job& job) {
  long long newest = 0;
  for (const auto& [rank, path] : rank_logs(job.dir)) {
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0) newest = std::max<long long>(newest, st.st_mtime);
  }
  return newest;
}

std::string format_job_metrics(const std::vector<Job>& records, long long now,
                               const LastOutputTime& last_output) {
  // A manual-mode node's own record is no job of its own: node 0's record
  // stands for the job (with every node's GPUs), here as in a shared home.
  std::vector<Job> jobs;
  for (const auto& record : records)
    if (record.info.node_of_job.empty()) jobs.push_back(record);
  Family by_status("dlaunch_jobs", "Jobs in the state dir, by status.");
  std::map<JobStatus, int> counts;
  for (const auto& job : jobs) ++counts[job.status];
  for (const auto status : kEveryStatus)
    by_status.add({{"status", ascii_lower(job_status_name(status))}}, counts[status]);

  Family status("dlaunch_job_status", "A job's status: 1 for the status it has.");
  Family ranks("dlaunch_job_ranks", "Ranks of the job (its world size).");
  Family hosts("dlaunch_job_hosts", "Hosts the job runs on.");
  Family restarts("dlaunch_job_restarts_total", "Restart rounds of the job so far.",
                  MetricType::Counter);
  Family started("dlaunch_job_start_time_seconds", "When the job started, in unix seconds.");
  Family ended("dlaunch_job_end_time_seconds", "When the job ended, in unix seconds.");
  Family exit_code("dlaunch_job_exit_code", "The exit code the job ended with.");
  Family last_line("dlaunch_job_last_output_timestamp_seconds",
                   "When a rank of the active job last wrote a line, in unix seconds.");
  Family since("dlaunch_job_seconds_since_output",
               "Seconds since a rank of the active job last wrote a line.");
  Family stalled("dlaunch_job_stalled",
                 "1 while no rank of the job made progress for the stall time (STALLED).");
  std::map<std::string, int> gpus_by_host;
  for (const auto& job : jobs) {
    if (!shown(job, now)) continue;
    const std::vector<ClientMetric::Label> of_job{{"job_name", job.info.name}};
    status.add({{"job_name", job.info.name}, {"status", ascii_lower(job_status_name(job.status))}},
               1);
    ranks.add(of_job, job_ranks(job));
    hosts.add(of_job, job.info.nnodes);
    restarts.add(of_job, job_restarts(job));
    started.add(of_job, static_cast<double>(job.info.started));
    const bool active = is_active(job.status) || job.status == JobStatus::stalled;
    if (job.result) {
      ended.add(of_job, static_cast<double>(job.result->finished));
      exit_code.add(of_job, job.result->exit_code);
    }
    if (!active) continue;
    stalled.add(of_job, job.status == JobStatus::stalled ? 1 : 0);
    if (const long long t = last_output(job); t > 0) {
      last_line.add(of_job, static_cast<double>(t));
      since.add(of_job, static_cast<double>(std::max(0LL, now - t)));
    }
    for (const auto& node : job.info.nodes)
      if (node.gpus > 0 && node.state == "running") gpus_by_host[node.host] += node.gpus;
  }
  Family gpus("dlaunch_host_gpus_allocated", "GPUs of the host that ranks of dlaunch jobs hold.");
  for (const auto& [host, count] : gpus_by_host) gpus.add({{"host", host}}, count);

  std::vector<MetricFamily> families;
  for (auto* f : {&by_status, &status, &ranks, &hosts, &restarts, &started, &ended, &exit_code,
                  &last_line, &since, &stalled, &gpus})
    families.push_back(f->take());
  // A family without samples is left out: promtool wants each declared one used.
  std::erase_if(families, [](const MetricFamily& f) { return f.metric.empty(); });
  return prometheus::TextSerializer().Serialize(families);
}

}  // namespace dlaunch
