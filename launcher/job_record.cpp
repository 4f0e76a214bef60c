#include "launcher/job_record.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <stdexcept>

namespace dlaunch {
namespace {

void make_private_dirs(const std::string& path) {
  std::string partial;
  for (std::size_t i = 0; i <= path.size(); ++i) {
    if (i == path.size() || (path[i] == '/' && i > 0)) {
      partial = path.substr(0, i);
      if (::mkdir(partial.c_str(), 0700) != 0 && errno != EEXIST) {
        throw std::runtime_error("cannot create " + partial + ": " + std::strerror(errno));
      }
    }
  }
}

void write_private_file(const std::string& path, const std::string& content, bool append) {
  const int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (append ? O_APPEND : O_TRUNC);
  const int fd = ::open(path.c_str(), flags, 0600);
  if (fd < 0) return;
  std::string_view rest(content);
  while (!rest.empty()) {
    const ssize_t n = ::write(fd, rest.data(), rest.size());
    if (n <= 0) break;
    rest.remove_prefix(static_cast<std::size_t>(n));
  }
  ::close(fd);
}

std::string now_iso() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace

std::string json_escape(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
  }
  return out;
}

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

void write_job_started(const std::string& job_dir, const std::string& job,
                       const std::vector<std::string>& command, const std::string& mode,
                       int nnodes) {
  std::string json = "{\n  \"job\": \"" + json_escape(job) + "\",\n  \"mode\": \"" + mode +
                     "\",\n  \"nnodes\": " + std::to_string(nnodes) + ",\n  \"command\": [";
  for (std::size_t i = 0; i < command.size(); ++i) {
    json += (i ? ", \"" : "\"") + json_escape(command[i]) + "\"";
  }
  json += "],\n  \"coordinator_pid\": " + std::to_string(::getpid()) + ",\n  \"started\": \"" +
          now_iso() + "\"\n}\n";
  write_private_file(job_dir + "/job.json", json, false);
}

void write_job_finished(const std::string& job_dir, const JobResult& result) {
  std::string json = "{\n  \"finished\": \"" + now_iso() +
                     "\",\n  \"exit_code\": " + std::to_string(result.exit_code) +
                     ",\n  \"restarts\": " + std::to_string(result.restarts) +
                     ",\n  \"root_cause\": \"" + json_escape(result.root_cause) +
                     "\",\n  \"root_cause_tail\": [";
  for (std::size_t i = 0; i < result.root_cause_tail.size(); ++i) {
    json += (i ? ", \"" : "\"") + json_escape(result.root_cause_tail[i]) + "\"";
  }
  json += "]\n}\n";
  write_private_file(job_dir + "/result.json", json, false);
}

}  // namespace dlaunch
