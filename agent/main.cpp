// dlaunch-agent: started by dlaunch on each node (locally, over SSH or as a
// task of a Slurm job step) with its launch spec on stdin. Not meant to be run
// by hand. `--slurm`: stdin carries every node's spec (agent/slurm_spec.h).
#include <openssl/crypto.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

#include "agent/agent.h"
#include "agent/container_reaper.h"
#include "agent/guardian.h"
#include "agent/slurm_spec.h"
#include "common/log.h"
#include "common/posix.h"
#include "common/version.h"
#include "protocol/auth.h"
#include "protocol/launch_spec.h"

int main(int argc, char** argv) {
  dlaunch::log::set_program_name("dlaunch-agent");
  // A static binary must load no module: no OpenSSL configuration (it may name
  // providers or engines, loaded by dlopen), only the built-in SHA-256 and RNG.
  OPENSSL_init_crypto(OPENSSL_INIT_NO_LOAD_CONFIG, nullptr);
  if (argc > 1 && (std::strcmp(argv[1], "--version") == 0)) {
    std::printf("dlaunch-agent %s\n", dlaunch::kVersion);
    return 0;
  }
  // Diagnostics of the agent itself, forwarded to the coordinator's stderr.
  if (const char* debug = std::getenv("DLAUNCH_AGENT_DEBUG"); debug && *debug) {
    dlaunch::log::set_level(dlaunch::log::Level::debug);
  }
  const bool slurm = argc > 1 && std::strcmp(argv[1], "--slurm") == 0;
  const char* node = slurm ? std::getenv("SLURMD_NODENAME") : nullptr;
  if (slurm && (node == nullptr || *node == '\0')) {
    std::fprintf(stderr, "dlaunch-agent: --slurm needs SLURMD_NODENAME (srun sets it)\n");
    return 2;
  }
  auto spec = slurm ? dlaunch::read_slurm_launch_spec(0, node) : dlaunch::read_launch_spec(0);
  if (slurm) {
    if (spec) spec->slurm_task = true;
    dlaunch::forget_slurm_task_variables();
  }
  if (!spec) {
    std::fprintf(stderr, "dlaunch-agent: %s\n", spec.error().c_str());
    return 2;
  }
  // Info lines too: which container engine `auto` found is worth a line.
  if (!dlaunch::log::enabled(dlaunch::log::Level::info))
    dlaunch::log::set_level(dlaunch::log::Level::info);
  dlaunch::raise_descriptor_limit();
  const auto silence_limit = dlaunch::worker_silence_limit(spec->heartbeat_timeout_s);
  // Containers outlive their engine's client (conmon or a daemon holds them):
  // whatever becomes of this agent, the reaper removes its containers last.
  if (!spec->container.image.empty() && !spec->check) {
    spec->container.agent_token = dlaunch::auth::to_hex(dlaunch::auth::random_bytes(8));
    // No engine here: the agent says so when it prepares the image.
    if (auto engine = dlaunch::find_container_engine(spec->container)) {
      if (auto token = dlaunch::start_container_reaper(std::move(*engine))) {
        spec->container.agent_token = *token;
      } else {
        dlaunch::log::warn(
            "cannot start the container reaper: containers may outlive a killed agent");
      }
    }
  }
  return dlaunch::run_guarded(
      [&spec](int pulse_fd) { return dlaunch::run_agent(std::move(*spec), 0, pulse_fd); },
      silence_limit);
}
