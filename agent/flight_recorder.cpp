#include "agent/flight_recorder.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <thread>

#include "common/posix.h"
#include "protocol/messages.h"

namespace dlaunch {
namespace {

constexpr const char* kEntries = "2000";
constexpr const char* kFilePrefix = "/nccl_trace_rank_";
constexpr auto kPoll = std::chrono::milliseconds(50);

bool has(const EnvMap& env, const char* name) {
  const auto it = env.find(name);
  return it != env.end() && !it->second.empty();
}

// The first of the names that is set, else "".
std::string first_set(const EnvMap& env, std::initializer_list<const char*> names) {
  for (const char* name : names)
    if (has(env, name)) return env.at(name);
  return {};
}

struct FileState {
  std::int64_t mtime_ns = -1;
  std::int64_t size = -1;
};

FileState state_of(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return {};
  return {mtime_ns(st), static_cast<std::int64_t>(st.st_size)};
}

}  // namespace

std::string flight_recorder_dir(const std::string& job) {
  std::string dir = user_temp_directory();
  if (dir.empty()) return dir;
  for (const std::string& part : {std::string("flight-recorder"), job}) {
    dir += "/" + part;
    ::mkdir(dir.c_str(), 0700);
  }
  return dir;
}

FlightRecorderPaths add_flight_recorder_environment(EnvMap& env, const std::string& dir) {
  if (!has(env, "TORCH_FR_BUFFER_SIZE") && !has(env, "TORCH_NCCL_TRACE_BUFFER_SIZE")) {
    env["TORCH_FR_BUFFER_SIZE"] = kEntries;
    env["TORCH_NCCL_TRACE_BUFFER_SIZE"] = kEntries;
  }
  if (!has(env, "TORCH_NCCL_DUMP_ON_TIMEOUT")) env["TORCH_NCCL_DUMP_ON_TIMEOUT"] = "1";
  if (!has(env, "TORCH_FR_DUMP_TEMP_FILE") && !has(env, "TORCH_NCCL_DEBUG_INFO_TEMP_FILE")) {
    env["TORCH_FR_DUMP_TEMP_FILE"] = dir + kFilePrefix;
    env["TORCH_NCCL_DEBUG_INFO_TEMP_FILE"] = dir + kFilePrefix;
  }
  if (!has(env, "TORCH_NCCL_DEBUG_INFO_PIPE_FILE"))
    env["TORCH_NCCL_DEBUG_INFO_PIPE_FILE"] = dir + kFilePrefix;
  return {first_set(env, {"TORCH_FR_DUMP_TEMP_FILE", "TORCH_NCCL_DEBUG_INFO_TEMP_FILE"}),
          env["TORCH_NCCL_DEBUG_INFO_PIPE_FILE"]};
}

FlightRecordAsked ask_flight_record(const FlightRecorderPaths& paths, int rank) {
  FlightRecordAsked asked;
  if (paths.dump_prefix.empty()) return asked;
  asked.before_ns = state_of(paths.dump_prefix + std::to_string(rank)).mtime_ns;
  if (paths.pipe_prefix.empty()) return asked;
  const std::string pipe = paths.pipe_prefix + std::to_string(rank) + ".pipe";
  struct stat st {};
  if (::stat(pipe.c_str(), &st) != 0 || !S_ISFIFO(st.st_mode)) return asked;
  // Non-blocking: with no reader (the rank has no NCCL process group, or is
  // gone) the open fails at once with ENXIO instead of waiting for one.
  const int fd = ::open(pipe.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return asked;
  asked.asked = ::write(fd, "1", 1) == 1;
  ::close(fd);
  return asked;
}

FlightRecord collect_flight_record(const FlightRecorderPaths& paths, int rank,
                                   const FlightRecordAsked& asked, std::chrono::milliseconds wait) {
  FlightRecord record;
  if (paths.dump_prefix.empty()) return record;
  const std::string file = paths.dump_prefix + std::to_string(rank);
  // Asked: until the dump is newer than before and its size held for a poll.
  const auto deadline = std::chrono::steady_clock::now() + wait;
  FileState last = state_of(file);
  while (asked.asked && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(kPoll);
    const FileState now = state_of(file);
    if (now.mtime_ns > asked.before_ns && now.size > 0 && now.size == last.size) break;
    last = now;
  }
  const FileState found = state_of(file);
  if (found.size <= 0) {
    if (asked.asked)
      record.note = "flight recorder: asked through its pipe, no dump in " +
                    std::to_string(wait.count()) + " ms (" + file + ")";
    return record;
  }
  const bool fresh = found.mtime_ns > asked.before_ns;
  if (static_cast<std::size_t>(found.size) > proto::kMaxFlightRecord) {
    record.note = "flight recorder: " + file + " holds " + std::to_string(found.size) +
                  " bytes, more than a report carries: kept on this host";
    return record;
  }
  std::ifstream in(file, std::ios::binary);
  record.bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  record.note = "flight recorder: " + std::to_string(record.bytes.size()) + " bytes from " + file +
                (fresh ? "" : " (written before this gathering: on a watchdog timeout?)");
  return record;
}

}  // namespace dlaunch
