// A job's directory under the state dir: <log-dir>/<job>/ holds rank-<R>.log,
// job.toml (the record: command, mode, status, coordinator pid and start
// time, nodes with their ranks and agent pids, restart round, and once the job
// ended its [result]: exit code, root cause and its last lines) and, for a
// detached job, coordinator.log. Directories are 0700, files 0600. The job's
// secret is never written here. The job commands (list, get, logs, stop,
// delete) read the record back. Records of older versions kept the result in
// result.toml; it is still read.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace dlaunch {

// PENDING: connecting and in the rendezvous. LOST is never written: a reader
// decides it for an active record whose coordinator is gone.
// stalled: running, but no rank made progress for the stall time (it may go on);
// hung: ended by --hang-timeout (exit 124).
enum class JobStatus {
  pending,
  running,
  restarting,
  succeeded,
  failed,
  stopped,
  lost,
  stalled,
  hung
};

std::string_view job_status_name(JobStatus status);                // "PENDING", ...
std::optional<JobStatus> parse_job_status(std::string_view text);  // either case
// PENDING, RUNNING and RESTARTING: the coordinator is (or should be) at work.
bool is_active(JobStatus status);

// One node of the job as the record shows it.
struct NodeRecord {
  std::string host;
  int node_rank = 0;
  int first_rank = -1;  // global rank of its first process; -1 until assigned
  int ranks = 0;        // its processes
  long long agent_pid = 0;
  std::string state;  // "pending", "running", "done", "failed", "lost"
  // GPUs its ranks hold: one per rank, up to the host's GPUs (0 without any).
  int gpus = 0;

  bool operator==(const NodeRecord&) const = default;
};

// A change of an elastic job's membership (launcher/fleet/membership.h): a
// node lost or retired, a spare taking its place, the nodes a round started on.
struct HistoryEntry {
  long long time = 0;  // unix seconds
  int round = 0;
  std::string what;

  bool operator==(const HistoryEntry&) const = default;
};

struct JobInfo {
  std::string name;
  std::string mode;
  int nnodes = 1;
  std::vector<std::string> command;
  long long coordinator_pid = 0;
  // The coordinator's start time in clock ticks since boot (/proc/PID/stat
  // field 22): with the pid, it tells the coordinator from a process that
  // reused its pid.
  long long coordinator_start_ticks = 0;
  // The machine of the coordinator, and its boot: a state dir in a shared home
  // (NFS) holds jobs of other machines, whose pids mean nothing here. Empty in
  // older records (taken for this machine's).
  std::string coordinator_host;
  std::string coordinator_boot;
  long long started = 0;  // unix seconds
  // The same in milliseconds, so that jobs started within one second still
  // list newest first; 0 in older records.
  long long started_ms = 0;
  std::vector<std::string> hosts;
  // As written; records from before statuses existed read as RUNNING.
  JobStatus status = JobStatus::pending;
  int round = 0;  // the current restart round
  std::vector<NodeRecord> nodes = {};
  std::string workdir = {};          // where the coordinator started
  std::string tensorboard_dir = {};  // --tensorboard-dir, on rank 0's host
  std::string checkpoint_dir = {};   // --checkpoint-dir, on node 0
  std::string git_url = {};          // --sync-git: the repository
  std::string git_commit = {};       // and the one commit every host ran
  bool detached = false;
  std::vector<HistoryEntry> history = {};  // oldest first
  // A manual-mode node other than 0 keeps a record of its own
  // (launcher/cli/worker_node.h): the job it is a node of, which node it is
  // ("node1", or "node-<host>" when the rendezvous gives the rank), and node
  // 0's rendezvous address. Empty in node 0's record and every other job's.
  std::string node_of_job = {};
  std::string node_name = {};  // a key of its own: [[node]] is the node list
  std::string node0 = {};
};

struct JobResult {
  int exit_code = 0;
  std::string root_cause;  // one line; empty on success
  std::vector<std::string> root_cause_tail;
  int restarts = 0;
  int world_size = 0;
  long long finished = 0;  // unix seconds
  // dlaunch itself was stopped (Ctrl-C, SIGTERM, `dlaunch stop`); a rank that
  // exits 130 or 143 on its own is a failure, not an interruption.
  bool interrupted = false;
  bool hung = false;  // ended by --hang-timeout
};

// The final status a result stands for.
JobStatus final_status(const JobResult& result);

// Each record is written whole or not at all: to a temporary file in the job
// directory, flushed to disk, then renamed over the final name, so a reader (or
// a crash) never sees half a record and a failed write never empties an old
// one. Returns nothing on success, else one line naming the file and the
// system's reason ("cannot write <dir>/job.toml: No space left on device")
// for the caller to report. A killed writer can leave a hidden
// ".<name>.XXXXXX" temporary behind; readers never look at it.
Result<void> write_job_record(const std::string& job_dir, const JobInfo& info,
                              const JobResult* result = nullptr);
std::optional<JobInfo> read_job_info(const std::string& job_dir);
// The [result] of job.toml, else an older record's result.toml.
std::optional<JobResult> read_job_result(const std::string& job_dir);

// Creates `dir` and its parents, 0700; an error names the one that cannot be.
Result<void> make_private_dirs(const std::string& dir);

}  // namespace dlaunch
