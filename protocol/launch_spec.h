// What the coordinator tells a freshly started agent, written to the agent's
// standard input (never its command line: it carries the job's secret). The
// agent keeps reading stdin afterwards: end-of-file there means the coordinator
// or its SSH channel is gone, and the agent stops its ranks.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace dlaunch {

// --image: each rank runs in a container of this image on its host. Which
// engine, and the exact command line, are the agent's to decide
// (agent/container_command.h), since only the host knows what it has.
struct ContainerSpec {
  std::string image;            // empty: ranks run on the host itself
  std::string engine = "auto";  // auto, podman, docker, apptainer, enroot
  // Empty: the containers share the host's IPC namespace and /dev/shm, as a
  // plain rank does. Else each container gets a private /dev/shm of this size.
  std::string shm_size = {};
  std::vector<std::string> mounts = {};  // SRC:DST[:ro], bind-mounted as given
  // --image-file: the file's name in the host's image cache ("<sha256>.tar",
  // ".sif", ".sqsh"), sent before the ranks start (agent/image_cache.h); the
  // ranks run what it holds, or `image` from it when that is set.
  std::string image_file = {};
  // Set by dlaunch-agent itself, never sent: the label value of the containers
  // this agent starts, by which its guardian sweeps them.
  std::string agent_token = {};
};

// --sync-git: every host checks out one commit, resolved by the coordinator,
// into <workdir>/code/<name> before it joins (agent/git_checkout.h).
struct GitSpec {
  std::string url;     // as git takes it; empty: no --sync-git
  std::string commit;  // the full object name
  std::string name;    // the directory under <workdir>/code
  std::string job;     // the job's name: another job's refusal names it
};

struct LaunchSpec {
  std::string secret;     // the job's 256-bit secret (raw bytes)
  std::string rdzv_host;  // where the rendezvous listens, as this host reaches it
  std::uint16_t rdzv_port = 0;
  std::int32_t node_rank = 0;
  std::int32_t nproc =
      0;  // 0: one per GPU found, else 1; -1: one per CPU; -2: per GPU, else per CPU
  std::string host_name;                   // the host's name in the plan, for prefixes and errors
  std::vector<std::string> argv;           // the program and its arguments, byte for byte
  std::map<std::string, std::string> env;  // extra environment (hosts file `env`)
  std::string interface;                   // NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME when known
  // The ranks' working directory; empty: the agent's own. A leading "~/" is
  // the home directory of the agent's user.
  std::string workdir;
  // --workdir: a missing `workdir` is an error naming the host; otherwise the
  // agent's own directory (home over SSH) is used instead.
  bool workdir_required = false;
  bool echo = false;  // also print this node's rank output locally (manual mode)
  std::int32_t rdzv_timeout_s = 600;
  std::int32_t grace_s = 10;
  std::int32_t heartbeat_timeout_s = 15;
  std::int32_t nnodes = 0;  // the job's node count, sent in Join so node 0 can refuse a mismatch
  // --master-port: node 0's probe port is this one, so the probe proves the
  // port the ranks' TCPStore will bind (a firewall may open only it). 0: any.
  std::int32_t master_port = 0;
  // `dlaunch check`: join, answer FactsRequest, Probe and PeerTest, start no
  // rank (argv may be empty).
  bool check = false;
  // --tensorboard-dir, relative to `workdir`: the agent of the node with rank
  // 0 sends the files under it to the coordinator (FileChunk). Empty: none.
  std::string tensorboard_dir = {};
  // Set by `dlaunch-agent --slurm` itself, never sent: a task of srun
  // --kill-on-bad-exit=1 exits 0 after the coordinator's final Stop, so that
  // Slurm ends the step only for an agent that died, not for one that stopped
  // while the others still give their ranks their grace.
  bool slurm_task = false;
  // --sync: `workdir` is created when missing (with its parents) and receives
  // the coordinator's SyncOffer before the ranks start.
  bool sync = false;
  // --checkpoint-dir, relative to `workdir`: the agent of the node with rank 0
  // sends each complete file under it to the coordinator (FileChunk, set
  // checkpoint), and a new node 0's agent receives the latest ones there
  // before its ranks start. The ranks get it as DLAUNCH_CHECKPOINT_DIR.
  std::string checkpoint_dir = {};
  // deepspeed's (and torch.distributed.launch's) way: each rank's arguments
  // carry --local_rank=LOCAL_RANK after the script (protocol/rank_argv.h).
  bool pass_local_rank = false;
  ContainerSpec container = {};
  GitSpec git = {};
};

// The stdin stream: "DLSP" magic, u32 length, then the encoded fields.
std::string encode_launch_spec(const LaunchSpec& spec);

// A directory given relative to the ranks' working directory (--tensorboard-dir,
// --checkpoint-dir): absolute under `workdir`, or as given when it is absolute
// or `workdir` is empty (then the ranks start in the agent's own directory, so
// the relative path names the same place for both).
std::string in_workdir(const LaunchSpec& spec, const std::string& dir);

// Reads exactly one launch spec from a file descriptor (blocking). Returns an
// error message in `error` on a short read, a bad magic or a malformed field.
Result<LaunchSpec> read_launch_spec(int fd);
std::optional<LaunchSpec> decode_launch_spec_body(std::string_view body);

}  // namespace dlaunch
