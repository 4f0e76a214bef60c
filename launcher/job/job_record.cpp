#include "launcher/job/job_record.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <toml++/toml.h>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <string_view>

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

std::string failure(const std::string& what, const std::string& path, int error) {
  return "cannot " + what + " " + path + ": " + std::strerror(error);
}

// Closes the descriptor and removes the temporary unless it was renamed.
class TempFile {
 public:
  explicit TempFile(std::string path_template) : path_(std::move(path_template)) {
    fd_ = ::mkostemp(path_.data(), O_CLOEXEC);
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  ~TempFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!renamed_) ::unlink(path_.c_str());
  }

  bool opened() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  // Closes and reports the error close() saw (NFS reports write-back failures there).
  int close() {
    const int result = ::close(fd_);
    fd_ = -1;
    return result;
  }
  void mark_renamed() { renamed_ = true; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
  bool renamed_ = false;
};

bool write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = EIO;
      return false;
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

// The rename is durable only once the directory itself is on disk.
int sync_directory(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return -1;
  const int result = ::fsync(fd);
  const int saved = errno;
  ::close(fd);
  errno = saved;
  return result;
}

std::optional<std::string> write_private_file(const std::string& dir, const std::string& name,
                                              const std::string& content) {
  const std::string path = dir + "/" + name;
  // Hidden and unique, in the same directory so that rename() is atomic;
  // mkostemp creates it 0600.
  TempFile tmp(dir + "/." + name + ".XXXXXX");
  if (!tmp.opened()) return failure("create a temporary file for", path, errno);
  if (!write_all(tmp.fd(), content)) return failure("write", path, errno);
  if (::fsync(tmp.fd()) != 0) return failure("write", path, errno);
  if (tmp.close() != 0) return failure("write", path, errno);
  if (::rename(tmp.path().c_str(), path.c_str()) != 0) return failure("rename to", path, errno);
  tmp.mark_renamed();
  if (sync_directory(dir) != 0) return failure("flush the directory of", path, errno);
  return std::nullopt;
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

std::optional<std::string> write_job_info(const std::string& job_dir, const JobInfo& info) {
  toml::table t{{"name", info.name},
                {"mode", info.mode},
                {"nnodes", info.nnodes},
                {"command", to_array(info.command)},
                {"coordinator_pid", info.coordinator_pid},
                {"coordinator_start_ticks", info.coordinator_start_ticks},
                {"started", info.started},
                {"hosts", to_array(info.hosts)}};
  return write_private_file(job_dir, "job.toml", serialize(t));
}

std::optional<std::string> write_job_result(const std::string& job_dir, const JobResult& r) {
  toml::table t{{"exit_code", r.exit_code},
                {"root_cause", r.root_cause},
                {"root_cause_tail", to_array(r.root_cause_tail)},
                {"restarts", r.restarts},
                {"world_size", r.world_size},
                {"finished", r.finished},
                {"interrupted", r.interrupted}};
  return write_private_file(job_dir, "result.toml", serialize(t));
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
  info.started = (*t)["started"].value_or(0LL);
  info.hosts = from_array((*t)["hosts"]);
  return info;
}

std::optional<JobResult> read_job_result(const std::string& job_dir) {
  auto t = read_table(job_dir + "/result.toml");
  if (!t) return std::nullopt;
  // A result without its exit code (cut short) says nothing: not a success.
  const auto code = (*t)["exit_code"].value<int>();
  if (!code) return std::nullopt;
  JobResult r;
  r.exit_code = *code;
  r.root_cause = (*t)["root_cause"].value_or(std::string());
  r.root_cause_tail = from_array((*t)["root_cause_tail"]);
  r.restarts = (*t)["restarts"].value_or(0);
  r.world_size = (*t)["world_size"].value_or(0);
  r.finished = (*t)["finished"].value_or(0LL);
  // Records written before the key existed: an interruption's codes.
  r.interrupted = (*t)["interrupted"].value_or(r.exit_code == 130 || r.exit_code == 143);
  return r;
}

}  // namespace dlaunch
