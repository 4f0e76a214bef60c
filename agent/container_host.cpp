#include "agent/container_host.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "common/captured_command.h"
#include "common/posix.h"
#include "common/text.h"

namespace dlaunch {
namespace {

constexpr auto kQuick = std::chrono::seconds(30);
// A pull of a training image (CUDA, PyTorch) is gigabytes: minutes are normal.
constexpr auto kPull = std::chrono::minutes(30);

// What an engine said, for an error line: its last lines of stderr (else stdout).
std::string said(const CapturedOutput& run) {
  return run.timed_out ? "no answer in time" : last_words(run);
}

Result<ContainerHost> find_engine(const std::string& wanted) {
  ContainerHost host;
  if (wanted == "auto") {
    for (const auto& candidate : engine_candidates()) {
      host.executable = find_on_path(candidate.executable);
      if (!host.executable.empty()) {
        host.engine = candidate.engine;
        return host;
      }
    }
    return fail(
        "--image needs a container engine, and none is on PATH (looked for podman, docker, "
        "apptainer, singularity and enroot)");
  }
  const auto engine = parse_container_engine(wanted);
  if (!engine) return fail("unknown container engine '" + wanted + "'");
  host.engine = *engine;
  host.executable = find_on_path(wanted);
  if (host.executable.empty()) return fail(wanted + " is not on PATH");
  return host;
}

}  // namespace

Result<ContainerHost> find_container_engine(const ContainerSpec& spec) {
  auto host = find_engine(spec.engine);
  if (host) host->agent_token = spec.agent_token;
  return host;
}

Result<ContainerHost> prepare_container_host(const ContainerSpec& spec) {
  auto found = find_container_engine(spec);
  if (!found) return found;
  ContainerHost host = std::move(*found);
  const std::string name(container_engine_name(host.engine));
  const auto version = run_captured({host.executable, "--version"}, kQuick);
  if (!version.ok()) return fail(name + " --version failed: " + said(version));
  const auto lines = split_lines(version.out);
  host.version = lines.empty() ? name : lines.front();
  if (!spec.image_file.empty()) {
    // The file arrives after the agent joins (agent/image_cache.h).
    sweep_orphaned_containers(host);
    return host;
  }
  const auto present = image_present_command(host.engine, host.executable, spec.image);
  if (present.empty()) {
    // apptainer and enroot take an image file (or apptainer a URI it fetches).
    // A bare name may be enroot's created container: only a path is checked.
    const bool a_file =
        spec.image.find("://") == std::string::npos && spec.image.find('/') != std::string::npos;
    if (a_file && ::access(spec.image.c_str(), R_OK) != 0)
      return fail("image file " + spec.image + " is not readable");
    return host;
  }
  // Containers whose agent and reaper were both killed (kill -9 of every
  // process, a reboot of nothing but them) are removed by the next agent here.
  sweep_orphaned_containers(host);
  if (run_captured(present, kQuick).ok()) return host;
  const auto pull =
      run_captured(pull_image_command(host.engine, host.executable, spec.image), kPull);
  if (!pull.ok()) return fail(name + " cannot pull " + spec.image + ": " + said(pull));
  return host;
}

ContainerFacts container_facts(const ContainerSpec& spec) {
  ContainerFacts facts;
  const auto found = find_container_engine(spec);
  if (!found) return facts;
  const ContainerHost& host = *found;
  const auto version = run_captured({host.executable, "--version"}, kQuick);
  const auto lines = split_lines(version.out);
  facts.engine = version.ok() && !lines.empty() ? lines.front()
                                                : std::string(container_engine_name(host.engine));
  if (spec.image.empty()) return facts;
  facts.image_id = "absent";
  const auto present = image_present_command(host.engine, host.executable, spec.image);
  if (present.empty()) {
    std::error_code ec;
    const auto size = std::filesystem::file_size(spec.image, ec);
    if (!ec) facts.image_id = "file of " + std::to_string(size) + " bytes";
    return facts;
  }
  const auto id = run_captured(
      {host.executable, "image", "inspect", "--format", "{{.Id}}", spec.image}, kQuick);
  const auto ids = split_lines(id.out);
  if (id.ok() && !ids.empty()) facts.image_id = ids.front();
  return facts;
}

int sweep_orphaned_containers(const ContainerHost& host) {
  const auto list = list_labelled_containers_command(host.engine, host.executable);
  if (list.empty()) return 0;
  std::vector<std::string> orphans;
  for (const auto& line : split_lines(run_captured(list, kQuick).out)) {
    const auto space = line.find(' ');
    if (space == std::string::npos) continue;
    const auto reaper = reaper_of(label_value(line.substr(space + 1), kAgentLabel));
    // Another launcher's, or an in-process agent's (no reaper): not ours to judge.
    if (!reaper) continue;
    if (process_start_ticks(static_cast<pid_t>(reaper->pid)) == reaper->start_ticks) continue;
    orphans.push_back(line.substr(0, space));
  }
  if (!orphans.empty())
    run_captured(remove_containers_command(host.engine, host.executable, orphans), kQuick);
  return static_cast<int>(orphans.size());
}

int sweep_containers(const ContainerHost& host) {
  const auto list =
      list_containers_command(host.engine, host.executable, kAgentLabel, host.agent_token);
  if (list.empty() || host.agent_token.empty()) return 0;
  const auto ids = split_lines(run_captured(list, kQuick).out);
  if (ids.empty()) return 0;
  run_captured(remove_containers_command(host.engine, host.executable, ids), kQuick);
  return static_cast<int>(ids.size());
}

}  // namespace dlaunch
