// The jobs of a state dir as Prometheus metrics: what `GET /metrics` of
// `dlaunch ui` serves and `dlaunch metrics` writes for node_exporter's
// textfile collector. Names follow Prometheus' conventions (a dlaunch_ prefix,
// base units, _total for counters, timestamps as _timestamp_seconds). The
// labels: job_name (not "job", which Prometheus sets to the scrape job's name),
// status in lower case, host.
//
//   dlaunch_jobs{status}                         jobs in the state dir by status
//   dlaunch_job_status{job_name,status} 1             each shown job's status
//   dlaunch_job_ranks{job_name}, dlaunch_job_hosts{job_name}, dlaunch_job_restarts_total{job_name}
//   dlaunch_job_start_time_seconds{job_name}, dlaunch_job_end_time_seconds{job_name}
//   dlaunch_job_exit_code{job_name}                   once it ended
//   dlaunch_job_last_output_timestamp_seconds{job_name}, dlaunch_job_seconds_since_output{job_name}
//   dlaunch_job_stalled{job_name}                     1 while no rank made progress
//   dlaunch_host_gpus_allocated{host}            GPUs the active jobs' ranks hold
//
// Per-job series cover the active jobs and those that ended within a day (as
// `dlaunch list`), so that a state dir of years of jobs stays a small scrape.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "launcher/record/job_store.h"

namespace dlaunch {

// The newest time any rank of the job wrote a line (unix seconds), or
// nothing known (0).
using LastOutputTime = std::function<long long(const Job&)>;

std::string format_job_metrics(const std::vector<Job>& jobs, long long now,
                               const LastOutputTime& last_output);

// The mtime of the job's newest rank log: when its last line was written.
long long last_rank_output(const Job& job);

}  // namespace dlaunch
