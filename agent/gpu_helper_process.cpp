#include "agent/gpu_helper_process.h"
#include "common/posix.h"
#include "common/spawn.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

extern "C" const char dlaunch_gpu_helper_start[];
extern "C" const char dlaunch_gpu_helper_end[];

namespace dlaunch {
namespace {

// Where the helper's bytes can be executed from: a memfd (Linux 3.17+, and
// no file left anywhere), else a file in the first writable directory that
// allows exec. `path` is what to run; `remove` says whether to unlink it once
// it runs; `fd` is kept open until then (the memfd's only reference).
struct Image {
  std::string path;
  bool remove = false;
  int fd = -1;
};

std::optional<Image> memfd_image() {
  const int fd = ::memfd_create("dlaunch-gpu-helper", MFD_CLOEXEC);
  if (fd < 0) return std::nullopt;
  if (!write_all(fd, gpu_helper_image())) {
    ::close(fd);
    return std::nullopt;
  }
  // exec reads the file through /proc before close-on-exec closes the fd.
  return Image{"/proc/self/fd/" + std::to_string(fd), false, fd};
}

std::optional<Image> file_image(std::string& error) {
  std::vector<std::string> dirs;
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) dirs.push_back(self.parent_path().string());
  const char* tmp = std::getenv("TMPDIR");
  if (tmp != nullptr && *tmp != '\0') dirs.emplace_back(tmp);
  dirs.emplace_back("/tmp");
  for (const auto& dir : dirs) {
    std::string path = dir + "/.dlaunch-gpu-helper.XXXXXX";
    const int fd = ::mkostemp(path.data(), O_CLOEXEC);
    if (fd < 0) continue;
    const bool written = write_all(fd, gpu_helper_image()) && ::fchmod(fd, 0700) == 0;
    ::close(fd);
    if (written) return Image{path, true, -1};
    ::unlink(path.c_str());
  }
  error = "cannot write the GPU helper to a memfd, beside the agent, $TMPDIR or /tmp";
  return std::nullopt;
}

}  // namespace

std::string_view gpu_helper_image() {
  return {dlaunch_gpu_helper_start,
          static_cast<std::size_t>(dlaunch_gpu_helper_end - dlaunch_gpu_helper_start)};
}

std::vector<std::string> split_helper_line(std::string_view line) {
  std::vector<std::string> fields;
  for (;;) {
    const auto tab = line.find('\t');
    fields.emplace_back(line.substr(0, tab));
    if (tab == std::string_view::npos) return fields;
    line.remove_prefix(tab + 1);
  }
}

std::unique_ptr<GpuHelperProcess> GpuHelperProcess::start(const std::string& mode,
                                                          const std::vector<std::string>& extra_env,
                                                          std::string& error) {
  auto image = memfd_image();
  if (!image) image = file_image(error);
  if (!image) return nullptr;
  int in[2], out[2];
  if (::pipe2(in, O_CLOEXEC) != 0) {
    error = std::string("pipe: ") + std::strerror(errno);
    return nullptr;
  }
  if (::pipe2(out, O_CLOEXEC) != 0) {
    error = std::string("pipe: ") + std::strerror(errno);
    ::close(in[0]);
    ::close(in[1]);
    return nullptr;
  }
  ChildSpawn spawn;
  spawn.program = image->path;
  spawn.argv = {"dlaunch-gpu-helper", mode};
  // The inherited variables win: a user's own setting over the agent's default.
  spawn.env = inherited_environment();
  for (const auto& extra : extra_env) {
    const auto name = extra.substr(0, extra.find('=') + 1);
    bool set = false;
    for (const auto& e : spawn.env) set = set || e.starts_with(name);
    if (!set) spawn.env.push_back(extra);
  }
  // stderr to /dev/null: the GPU libraries' own chatter would reach the
  // coordinator as the agent's.
  spawn.stdio = {in[0], out[1], -1};
  const auto spawned = spawn_child(spawn);
  ::close(in[0]);
  ::close(out[1]);
  if (image->fd >= 0) ::close(image->fd);
  if (image->remove) ::unlink(image->path.c_str());
  if (!spawned) {
    error = "cannot run the GPU helper: " + spawned.error();
    ::close(in[1]);
    ::close(out[0]);
    return nullptr;
  }
  return std::unique_ptr<GpuHelperProcess>(new GpuHelperProcess(*spawned, in[1], out[0]));
}

GpuHelperProcess::~GpuHelperProcess() {
  ::close(input_);
  ::close(output_);
  int status = 0;
  if (::waitpid(pid_, &status, WNOHANG) == 0) {
    ::kill(pid_, SIGKILL);
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
  }
}

bool GpuHelperProcess::write_line(std::string_view line) {
  // The agent ignores SIGPIPE: a helper that has exited makes this false.
  std::string text(line);
  text.push_back('\n');
  return write_all(input_, text);
}

std::optional<std::string> GpuHelperProcess::read_line(
    std::optional<std::chrono::milliseconds> timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout.value_or(std::chrono::hours(0));
  for (;;) {
    if (const auto newline = pending_.find('\n'); newline != std::string::npos) {
      std::string line = pending_.substr(0, newline);
      pending_.erase(0, newline + 1);
      return line;
    }
    int wait_ms = -1;
    if (timeout) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return std::nullopt;
      wait_ms = static_cast<int>(left.count());
    }
    pollfd p{output_, POLLIN, 0};
    const int ready = ::poll(&p, 1, wait_ms);
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return std::nullopt;
    char buffer[4096];
    const ssize_t got = ::read(output_, buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return std::nullopt;
    pending_.append(buffer, static_cast<std::size_t>(got));
  }
}

}  // namespace dlaunch
