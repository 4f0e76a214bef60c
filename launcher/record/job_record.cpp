#include "launcher/record/job_record.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <toml++/toml.h>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string_view>

#include "common/json.h"
#include "common/posix.h"
#include "common/private_file.h"

namespace dlaunch {
namespace {

toml::array to_array(const std::vector<std::string>& items) {
  toml::array a;
  for (const auto& s : items) a.push_back(s);
  return a;
}

template <class View>
std::vector<std::string> from_array(View node) {
  std::vector<std::string> out;
  if (const auto* a = node.as_array()) {
    for (const auto& item : *a) {
      if (auto s = item.template value<std::string>()) out.push_back(*s);
    }
  }
  return out;
}

// The nodes as an array of tables, `[[node]]`, written by hand: a job of
// 10,000 nodes is rewritten when it starts running and when it ends, and
// building that through toml++'s tree took about 25 ms each time on the
// coordinator's event loop. JSON's string escapes are TOML's basic-string
// escapes (json_quote also escapes DEL, as TOML asks).
void append_node_records(std::string& text, const std::vector<NodeRecord>& nodes) {
  text.reserve(text.size() + nodes.size() * 112);
  for (const auto& n : nodes) {
    text += "\n[[node]]\nhost = ";
    text += json_quote(n.host);
    text += "\nnode_rank = ";
    text += std::to_string(n.node_rank);
    text += "\nfirst_rank = ";
    text += std::to_string(n.first_rank);
    text += "\nranks = ";
    text += std::to_string(n.ranks);
    text += "\nagent_pid = ";
    text += std::to_string(n.agent_pid);
    text += "\nstate = ";
    text += json_quote(n.state);
    if (n.gpus > 0) {
      text += "\ngpus = ";
      text += std::to_string(n.gpus);
    }
    text += "\n";
  }
}

std::optional<toml::table> read_table(const std::string& path) {
  try {
    return toml::parse_file(path);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::string serialize(const toml::table& t) {
  std::ostringstream out;
  out << t << "\n";
  return out.str();
}

}  // namespace

std::string_view job_status_name(JobStatus status) {
  switch (status) {
    case JobStatus::pending:
      return "PENDING";
    case JobStatus::running:
      return "RUNNING";
    case JobStatus::restarting:
      return "RESTARTING";
    case JobStatus::succeeded:
      return "SUCCEEDED";
    case JobStatus::failed:
      return "FAILED";
    case JobStatus::stopped:
      return "STOPPED";
    case JobStatus::lost:
      return "LOST";
    case JobStatus::stalled:
      return "STALLED";
    case JobStatus::hung:
      return "HUNG";
  }
  return "?";
}

std::optional<JobStatus> parse_job_status(std::string_view text) {
  std::string upper(text);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (auto s : {JobStatus::pending, JobStatus::running, JobStatus::restarting,
                 JobStatus::succeeded, JobStatus::failed, JobStatus::stopped, JobStatus::lost,
                 JobStatus::stalled, JobStatus::hung}) {
    if (job_status_name(s) == upper) return s;
  }
  return std::nullopt;
}

bool is_active(JobStatus status) {
  return status == JobStatus::pending || status == JobStatus::running ||
         status == JobStatus::restarting || status == JobStatus::stalled;
}

JobStatus final_status(const JobResult& result) {
  if (result.interrupted) return JobStatus::stopped;
  if (result.hung && result.exit_code == 124) return JobStatus::hung;
  return result.exit_code == 0 ? JobStatus::succeeded : JobStatus::failed;
}

Result<void> make_private_dirs(const std::string& path) {
  for (std::size_t i = 1; i <= path.size(); ++i) {
    if (i == path.size() || path[i] == '/') {
      const std::string partial = path.substr(0, i);
      if (::mkdir(partial.c_str(), 0700) != 0 && errno != EEXIST)
        return fail("cannot create " + partial + ": " + std::strerror(errno));
    }
  }
  return {};
}

Result<void> write_job_record(const std::string& job_dir, const JobInfo& info,
                              const JobResult* result) {
  toml::table t{{"name", info.name},
                {"status", std::string(job_status_name(info.status))},
                {"mode", info.mode},
                {"nnodes", info.nnodes},
                {"command", to_array(info.command)},
                {"coordinator_pid", info.coordinator_pid},
                {"coordinator_start_ticks", info.coordinator_start_ticks},
                {"started", info.started},
                {"started_ms", info.started_ms},
                {"round", info.round},
                {"detached", info.detached},
                {"hosts", to_array(info.hosts)}};
  if (!info.coordinator_host.empty()) t.insert("coordinator_host", info.coordinator_host);
  if (!info.coordinator_boot.empty()) t.insert("coordinator_boot", info.coordinator_boot);
  if (!info.workdir.empty()) t.insert("workdir", info.workdir);
  if (!info.tensorboard_dir.empty()) t.insert("tensorboard_dir", info.tensorboard_dir);
  if (!info.checkpoint_dir.empty()) t.insert("checkpoint_dir", info.checkpoint_dir);
  if (!info.git_url.empty()) t.insert("git_url", info.git_url);
  if (!info.git_commit.empty()) t.insert("git_commit", info.git_commit);
  if (!info.node_of_job.empty()) {
    t.insert("node_of_job", info.node_of_job);
    t.insert("node_name", info.node_name);
    t.insert("node0", info.node0);
  }
  if (!info.history.empty()) {
    toml::array history;
    for (const auto& h : info.history)
      history.push_back(toml::table{{"time", h.time}, {"round", h.round}, {"what", h.what}});
    t.insert("history", std::move(history));
  }
  if (result) {
    const JobResult& r = *result;
    t.insert("result", toml::table{{"exit_code", r.exit_code},
                                   {"root_cause", r.root_cause},
                                   {"root_cause_tail", to_array(r.root_cause_tail)},
                                   {"restarts", r.restarts},
                                   {"world_size", r.world_size},
                                   {"finished", r.finished},
                                   {"interrupted", r.interrupted},
                                   {"hung", r.hung}});
  }
  std::string text = serialize(t);
  append_node_records(text, info.nodes);
  return write_private_file(job_dir, "job.toml", text);
}

std::optional<JobInfo> read_job_info(const std::string& job_dir) {
  auto t = read_table(job_dir + "/job.toml");
  if (!t) return std::nullopt;
  JobInfo info;
  info.name = (*t)["name"].value_or(std::string());
  info.mode = (*t)["mode"].value_or(std::string());
  info.nnodes = (*t)["nnodes"].value_or(1);
  info.command = from_array((*t)["command"]);
  info.coordinator_pid = (*t)["coordinator_pid"].value_or(0LL);
  info.coordinator_start_ticks = (*t)["coordinator_start_ticks"].value_or(0LL);
  info.coordinator_host = (*t)["coordinator_host"].value_or(std::string());
  info.coordinator_boot = (*t)["coordinator_boot"].value_or(std::string());
  info.started = (*t)["started"].value_or(0LL);
  info.started_ms = (*t)["started_ms"].value_or(0LL);
  if (info.started_ms == 0) info.started_ms = info.started * 1000;
  info.hosts = from_array((*t)["hosts"]);
  info.status =
      parse_job_status((*t)["status"].value_or(std::string())).value_or(JobStatus::running);
  info.round = (*t)["round"].value_or(0);
  info.detached = (*t)["detached"].value_or(false);
  info.workdir = (*t)["workdir"].value_or(std::string());
  info.tensorboard_dir = (*t)["tensorboard_dir"].value_or(std::string());
  info.checkpoint_dir = (*t)["checkpoint_dir"].value_or(std::string());
  info.git_url = (*t)["git_url"].value_or(std::string());
  info.git_commit = (*t)["git_commit"].value_or(std::string());
  info.node_of_job = (*t)["node_of_job"].value_or(std::string());
  info.node_name = (*t)["node_name"].value_or(std::string());
  info.node0 = (*t)["node0"].value_or(std::string());
  if (const auto* history = (*t)["history"].as_array()) {
    for (const auto& item : *history) {
      const auto* h = item.as_table();
      if (!h) continue;
      info.history.push_back({(*h)["time"].value_or(0LL), (*h)["round"].value_or(0),
                              (*h)["what"].value_or(std::string())});
    }
  }
  if (const auto* nodes = (*t)["node"].as_array()) {
    for (const auto& item : *nodes) {
      const auto* n = item.as_table();
      if (!n) continue;
      NodeRecord r;
      r.host = (*n)["host"].value_or(std::string());
      r.node_rank = (*n)["node_rank"].value_or(0);
      r.first_rank = (*n)["first_rank"].value_or(-1);
      r.ranks = (*n)["ranks"].value_or(0);
      r.agent_pid = (*n)["agent_pid"].value_or(0LL);
      r.state = (*n)["state"].value_or(std::string());
      r.gpus = (*n)["gpus"].value_or(0);
      info.nodes.push_back(std::move(r));
    }
  }
  return info;
}

namespace {

std::optional<JobResult> result_from(const toml::table& t) {
  // A result without its exit code (cut short) says nothing: not a success.
  const auto code = t["exit_code"].value<int>();
  if (!code) return std::nullopt;
  JobResult r;
  r.exit_code = *code;
  r.root_cause = t["root_cause"].value_or(std::string());
  r.root_cause_tail = from_array(t["root_cause_tail"]);
  r.restarts = t["restarts"].value_or(0);
  r.world_size = t["world_size"].value_or(0);
  r.finished = t["finished"].value_or(0LL);
  // Records written before the key existed: an interruption's codes.
  r.interrupted = t["interrupted"].value_or(r.exit_code == 130 || r.exit_code == 143);
  r.hung = t["hung"].value_or(false);
  return r;
}

}  // namespace

std::optional<JobResult> read_job_result(const std::string& job_dir) {
  if (auto t = read_table(job_dir + "/job.toml")) {
    if (const auto* result = (*t)["result"].as_table()) return result_from(*result);
  }
  auto old = read_table(job_dir + "/result.toml");
  if (!old) return std::nullopt;
  return result_from(*old);
}

}  // namespace dlaunch
