#include "agent/image_cache.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "common/captured_command.h"
#include "common/file_lock.h"
#include "common/posix.h"
#include "common/private_file.h"
#include "common/text.h"

namespace dlaunch {
namespace {

constexpr auto kQuick = std::chrono::seconds(30);
// Loading a training image (CUDA, PyTorch) unpacks gigabytes.
constexpr auto kLoad = std::chrono::minutes(30);

bool ends_with(std::string_view text, std::string_view tail) {
  return text.size() >= tail.size() && text.substr(text.size() - tail.size()) == tail;
}

std::string read_marker(const std::string& path) {
  std::ifstream in(path);
  std::string name;
  std::getline(in, name);
  return trim(name);
}

bool engine_has(const ContainerHost& host, const std::string& image) {
  return run_captured(image_present_command(host.engine, host.executable, image), kQuick).ok();
}

// podman or docker: load the archive unless the image it loaded as is still
// there. One agent of this user and machine at a time: two agents that both
// found the image gone (a host listed twice, two jobs) would load it together,
// and the engine may untag it between one load and the other, under ranks
// starting. The lock is the machine's, not the cache's: agents with another
// HOME or XDG_CACHE_HOME have their own caches but share the user's engine.
Result<std::string> load_archive(const ContainerHost& host, const std::string& path,
                                 const std::string& wanted) {
  const std::string engine(container_engine_name(host.engine));
  const std::string marker = path + "." + engine;
  const auto slash = marker.rfind('/');
  const std::string scratch = user_temp_directory();
  auto turn = FileLock::take(
      (scratch.empty() ? marker : scratch + "/image-load-" + engine) + ".lock", 0600);
  if (!turn) return fail(turn.error());
  std::string loaded = read_marker(marker);
  const std::string check = wanted.empty() ? loaded : wanted;
  if (loaded.empty() || check.empty() || !engine_has(host, check)) {
    const auto run =
        run_captured(load_image_command(host.engine, host.executable, path), kLoad, 1 << 20);
    if (!run.ok()) {
      // A file the engine cannot load never will be: it does not stay to
      // fill the disk (a good one is sent again by the next job).
      if (!run.timed_out) ::unlink(path.c_str());
      return fail(engine + " cannot load " + path + ": " +
                  (run.timed_out ? "no answer in time"
                                 : last_words(run) + " (removed from this host's cache)"));
    }
    const auto name = loaded_image_name(run.out + "\n" + run.err);
    if (!name) {
      ::unlink(path.c_str());
      return fail(engine + " found no image in " + path +
                  " (a root filesystem is none: `podman import` it, then `podman save`); "
                  "removed from this host's cache");
    }
    loaded = *name;
    // Whole or not at all: another agent of this machine may read it now.
    // Not kept: the next job loads the file again.
    (void)write_private_file(marker.substr(0, slash), marker.substr(slash + 1), loaded + "\n");
  }
  if (wanted.empty()) return loaded;
  if (!engine_has(host, wanted))
    return fail("--image " + wanted + " is not in --image-file (it holds " + loaded + ")");
  return wanted;
}

}  // namespace

Result<std::string> image_cache_directory() {
  const std::string base = dlaunch_cache_directory();
  if (base.empty()) return fail("no home directory for the image cache");
  const std::string dir = base + "/images";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return fail("cannot create the image cache " + dir + ": " + ec.message());
  ::chmod(dir.c_str(), 0700);
  return dir;
}

Result<std::string> ready_cached_image(const ContainerHost& host, const std::string& path,
                                       const std::string& wanted) {
  const std::string engine(container_engine_name(host.engine));
  const bool archive = ends_with(path, ".tar");
  switch (host.engine) {
    case ContainerEngine::podman:
    case ContainerEngine::docker:
      if (!archive)
        return fail(engine + " runs image archives (`podman save`, `docker save`), not " + path +
                    "; use --container-engine " +
                    (ends_with(path, ".sif") ? "apptainer" : "enroot"));
      return load_archive(host, path, wanted);
    case ContainerEngine::apptainer:
      if (ends_with(path, ".sqsh")) return fail("apptainer cannot run a squashfs image");
      return archive ? "docker-archive:" + path : path;
    case ContainerEngine::enroot:
      if (!ends_with(path, ".sqsh"))
        return fail("enroot runs squashfs images (.sqsh, `enroot import`), not " + path);
      return path;
  }
  return path;
}

std::optional<std::string> loaded_image_name(std::string_view output) {
  for (const auto& line : split_lines(std::string(output))) {
    for (std::string_view prefix : {"Loaded image(s): ", "Loaded image: ", "Loaded image ID: "}) {
      if (!std::string_view(line).starts_with(prefix)) continue;
      std::string names = trim(line.substr(prefix.size()));
      const auto comma = names.find(',');
      if (comma != std::string::npos) names = trim(names.substr(0, comma));
      if (!names.empty()) return names;
    }
  }
  return std::nullopt;
}

}  // namespace dlaunch
