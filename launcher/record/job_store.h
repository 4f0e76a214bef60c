// The jobs under a state dir as the job commands see them: each job's record
// read back, and its status decided from it. An active record (PENDING,
// RUNNING, RESTARTING) stays so only while its coordinator lives; a coordinator
// that died without ending the record leaves the job LOST.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "launcher/record/job_record.h"

namespace dlaunch {

// Pure: the status a job's record and its coordinator's liveness add up to.
// A result decides (records of older versions wrote no final status).
JobStatus decide_job_status(const JobInfo& info, const std::optional<JobResult>& result,
                            bool coordinator_alive);

// Where a record's coordinator runs, as this machine sees it.
enum class CoordinatorPlace {
  here,       // this boot of this machine: its pid can be looked up
  rebooted,   // this machine, an earlier boot: it is gone
  elsewhere,  // another machine sharing the state dir: its status is as written
};
CoordinatorPlace coordinator_place(const JobInfo& info, const std::string& host_name,
                                   const std::string& boot_id);
CoordinatorPlace coordinator_place(const JobInfo& info);  // of this machine

struct Job {
  std::string dir;
  JobInfo info;
  std::optional<JobResult> result;
  JobStatus status = JobStatus::lost;
  // Its coordinator runs on another machine (info.coordinator_host): it can
  // be seen here, not signalled.
  bool elsewhere = false;
};

// Seconds from start to finish (or to `now` while running); -1 for a lost job,
// whose end is unknown.
long long job_duration(const Job& job, long long now);

// Whether the coordinator of a job record still runs on this machine: its pid
// with the same start time (records from before start times were kept: a live
// process whose program is dlaunch itself, never dlaunch-agent). A coordinator
// of another machine or boot is not one of this machine's processes.
bool coordinator_alive(const JobInfo& info);

// The job in `dir`, or nothing when it holds no readable job.toml.
std::optional<Job> load_job(const std::string& dir);

// Every job under `log_dir`, newest first (by start time, then name).
std::vector<Job> load_jobs(const std::string& log_dir);

// The job called `name` under `log_dir`. A name with a '/' is never a job:
// it would reach outside the state dir.
std::optional<Job> find_job(const std::string& log_dir, const std::string& name);

// A job's rank log files by rank number: each rank's latest round's file
// (rank-<R>.<N>.log after restart N, else rank-<R>.log).
std::map<int, std::string> rank_logs(const std::string& job_dir);
// Every file of each rank by restart round: round 0 is rank-<R>.log, round N
// rank-<R>.<N>.log.
using RankLogRounds = std::map<int, std::map<int, std::string>>;
RankLogRounds rank_log_rounds(const std::string& job_dir);
// The same as rank_logs, from rounds already read.
std::map<int, std::string> latest_rank_logs(const RankLogRounds& rounds);

}  // namespace dlaunch
