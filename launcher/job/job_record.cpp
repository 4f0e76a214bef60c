#include "launcher/job/job_record.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <toml++/toml.h>
#include <cerrno>
#include <cstring>
#include <sstream>
#include <stdexcept>

namespace dlaunch {
namespace {

void make_private_dirs(const std::string& path) {
  for (std::size_t i = 1; i <= path.size(); ++i) {
    if (i == path.size() || path[i] == '/') {
      const std::string partial = path.substr(0, i);
      if (::mkdir(partial.c_str(), 0700) != 0 && errno != EEXIST) {
        throw std::runtime_error("cannot create " + partial + ": " + std::strerror(errno));
      }
    }
  }
}

// Written to a temporary name and renamed, so a reader never sees half a file.
void write_private_file(const std::string& path, const std::string& content) {
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return;
  std::string_view rest(content);
  while (!rest.empty()) {
    const ssize_t n = ::write(fd, rest.data(), rest.size());
    if (n <= 0) break;
    rest.remove_prefix(static_cast<std::size_t>(n));
  }
  ::close(fd);
  ::rename(tmp.c_str(), path.c_str());
}

toml::array to_array(const std::vector<std::string>& items) {
  toml::array a;
  for (const auto& s : items) a.push_back(s);
  return a;
}

std::vector<std::string> from_array(toml::node_view<toml::node> node) {
  std::vector<std::string> out;
  if (const auto* a = node.as_array()) {
    for (const auto& item : *a) {
      if (auto s = item.value<std::string>()) out.push_back(*s);
    }
  }
  return out;
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

std::string create_job_dir(const std::string& log_dir, const std::string& job,
                           std::string* job_dir) {
  make_private_dirs(log_dir);
  for (int attempt = 1; attempt < 10000; ++attempt) {
    const std::string name = attempt == 1 ? job : job + "-" + std::to_string(attempt);
    const std::string dir = log_dir + "/" + name;
    if (::mkdir(dir.c_str(), 0700) == 0) {
      *job_dir = dir;
      return name;
    }
    if (errno != EEXIST) {
      throw std::runtime_error("cannot create " + dir + ": " + std::strerror(errno));
    }
  }
  throw std::runtime_error("too many jobs named " + job + " in " + log_dir);
}

void write_job_info(const std::string& job_dir, const JobInfo& info) {
  toml::table t{{"name", info.name},
                {"mode", info.mode},
                {"nnodes", info.nnodes},
                {"command", to_array(info.command)},
                {"coordinator_pid", info.coordinator_pid},
                {"started", info.started},
                {"hosts", to_array(info.hosts)}};
  write_private_file(job_dir + "/job.toml", serialize(t));
}

void write_job_result(const std::string& job_dir, const JobResult& r) {
  toml::table t{{"exit_code", r.exit_code},
                {"root_cause", r.root_cause},
                {"root_cause_tail", to_array(r.root_cause_tail)},
                {"restarts", r.restarts},
                {"world_size", r.world_size},
                {"finished", r.finished}};
  write_private_file(job_dir + "/result.toml", serialize(t));
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
  info.started = (*t)["started"].value_or(0LL);
  info.hosts = from_array((*t)["hosts"]);
  return info;
}

std::optional<JobResult> read_job_result(const std::string& job_dir) {
  auto t = read_table(job_dir + "/result.toml");
  if (!t) return std::nullopt;
  JobResult r;
  r.exit_code = (*t)["exit_code"].value_or(0);
  r.root_cause = (*t)["root_cause"].value_or(std::string());
  r.root_cause_tail = from_array((*t)["root_cause_tail"]);
  r.restarts = (*t)["restarts"].value_or(0);
  r.world_size = (*t)["world_size"].value_or(0);
  r.finished = (*t)["finished"].value_or(0LL);
  return r;
}

}  // namespace dlaunch
