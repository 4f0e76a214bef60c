#include "launcher/cli/job_view.h"

#include <fstream>

#include "launcher/cli/job_text.h"

namespace dlaunch {

int job_ranks(const Job& job) {
  if (job.result && job.result->world_size > 0) return job.result->world_size;
  int ranks = 0;
  for (const auto& n : job.info.nodes) ranks += n.ranks;
  return ranks;
}

std::string shown_node_state(const Job& job, const NodeRecord& node) {
  if (job.status == JobStatus::lost && (node.state == "running" || node.state == "pending"))
    return "unknown";
  return node.state;
}

int job_restarts(const Job& job) {
  return job.result ? job.result->restarts : job.info.round;
}

std::string tensorboard_logdir(const Job& job) {
  return job.dir + "/tensorboard";
}

std::string checkpoint_copy(const Job& job) {
  return job.dir + "/checkpoint";
}

std::string format_age(long long seconds) {
  if (seconds < 0) return "-";
  if (seconds < 120) return formatted("%llds", seconds);
  if (seconds < 7200) return formatted("%lldm", seconds / 60);
  if (seconds < 2 * 86400) return formatted("%lldh", seconds / 3600);
  return formatted("%lldd", seconds / 86400);
}

std::optional<LastStacks> last_stacks(const std::string& job_dir) {
  std::ifstream in(job_dir + "/stacks/last.txt");
  LastStacks last;
  if (!std::getline(in, last.dir) || last.dir.empty()) return std::nullopt;
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) last.verdict.push_back(line);
  return last;
}

void write_job_json(JsonWriter& json, const Job& job, long long now) {
  const JobInfo& i = job.info;
  json.begin_object();
  json.key("name").value(i.name);
  json.key("status").value(job_status_name(job.status));
  json.key("mode").value(i.mode);
  json.key("command").begin_array();
  for (const auto& word : i.command) json.value(word);
  json.end_array();
  json.key("coordinator_pid").value(static_cast<std::int64_t>(i.coordinator_pid));
  json.key("coordinator_host").value(i.coordinator_host);
  json.key("coordinator_elsewhere").value(job.elsewhere);
  json.key("detached").value(i.detached);
  json.key("nnodes").value(i.nnodes);
  json.key("hosts").begin_array();
  for (const auto& h : i.hosts) json.value(h);
  json.end_array();
  json.key("ranks").value(job_ranks(job));
  json.key("restarts").value(job_restarts(job));
  json.key("started").value(static_cast<std::int64_t>(i.started));
  json.key("finished");
  if (job.result) {
    json.value(static_cast<std::int64_t>(job.result->finished));
  } else {
    json.null();
  }
  json.key("duration_s");
  if (const long long d = job_duration(job, now); d >= 0) {
    json.value(static_cast<std::int64_t>(d));
  } else {
    json.null();
  }
  json.key("exit_code");
  if (job.result) {
    json.value(job.result->exit_code);
  } else {
    json.null();
  }
  json.key("root_cause").value(job.result ? job.result->root_cause : std::string());
  json.key("root_cause_tail").begin_array();
  if (job.result) {
    for (const auto& line : job.result->root_cause_tail) json.value(line);
  }
  json.end_array();
  json.key("nodes").begin_array();
  for (const auto& n : i.nodes) {
    json.begin_object();
    json.key("host").value(n.host);
    json.key("node_rank").value(n.node_rank);
    json.key("first_rank").value(n.first_rank);
    json.key("ranks").value(n.ranks);
    json.key("agent_pid").value(static_cast<std::int64_t>(n.agent_pid));
    json.key("state").value(shown_node_state(job, n));
    json.key("gpus").value(n.gpus);
    json.end_object();
  }
  json.end_array();
  json.key("history").begin_array();
  for (const auto& h : i.history) {
    json.begin_object();
    json.key("time").value(static_cast<std::int64_t>(h.time));
    json.key("round").value(h.round);
    json.key("what").value(h.what);
    json.end_object();
  }
  json.end_array();
  json.key("dir").value(job.dir);
  json.key("stacks");
  if (const auto stacks = last_stacks(job.dir)) {
    json.begin_object();
    json.key("dir").value(stacks->dir);
    json.key("verdict").begin_array();
    for (const auto& line : stacks->verdict) json.value(line);
    json.end_array();
    json.end_object();
  } else {
    json.null();
  }
  const auto rounds = rank_log_rounds(job.dir);
  json.key("logs").begin_object();  // each rank's latest round's file
  for (const auto& [rank, path] : latest_rank_logs(rounds))
    json.key(std::to_string(rank)).value(path);
  json.end_object();
  json.key("log_rounds").begin_object();  // every round's file of each rank
  for (const auto& [rank, files] : rounds) {
    json.key(std::to_string(rank)).begin_object();
    for (const auto& [round, path] : files) json.key(std::to_string(round)).value(path);
    json.end_object();
  }
  json.end_object();
  json.key("tensorboard_dir").value(i.tensorboard_dir);
  json.key("tensorboard_logdir");
  if (i.tensorboard_dir.empty()) {
    json.null();
  } else {
    json.value(tensorboard_logdir(job));
  }
  json.key("workdir").value(i.workdir);
  json.key("checkpoint_dir").value(i.checkpoint_dir);
  json.key("git_url").value(i.git_url);
  json.key("git_commit").value(i.git_commit);
  // A manual-mode node's own record: the job it is a node of (else null).
  json.key("node_of_job");
  if (i.node_of_job.empty()) {
    json.null();
  } else {
    json.value(i.node_of_job);
  }
  json.key("node_name").value(i.node_name);
  json.key("node0").value(i.node0);
  json.key("checkpoint_copy");
  if (i.checkpoint_dir.empty()) {
    json.null();
  } else {
    json.value(checkpoint_copy(job));
  }
  json.end_object();
}

}  // namespace dlaunch
