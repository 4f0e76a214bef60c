// Everything the user asked for on the command line, parsed and validated but
// not yet acted on. parse_options is pure apart from reading the environment
// for defaults, so usage errors are unit-tested without starting anything.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace CLI {
class App;
}

namespace dlaunch {

enum class Mode {
  standalone,  // one machine: --nproc-per-node N -- PROG
  hosts,       // a host list (--hosts, --hostfile, -H, Slurm): agents local, over SSH or srun
  manual,      // --nnodes M --node-rank R --master-addr A: run by hand on each node
};

// --launcher: where the hosts come from when no host list is given, and how
// agents start: Slurm's hosts as one srun job step (launcher/transport/
// slurm_transport.h), the others over SSH (fork/exec for loopback hosts).
enum class Launcher {
  automatic,  // Slurm's hosts inside a Slurm job ($SLURM_JOB_ID) when nothing else names them
  ssh,        // hosts from --hosts, --hostfile or -H; Slurm's variables are not read
  slurm,      // hosts from SLURM_JOB_NODELIST, agents started by srun
  local,      // this machine only; Slurm's variables are not read
};

// Where a hosts-mode job's hosts come from.
enum class HostSource {
  none,        // not hosts mode
  hosts_file,  // --hosts: TOML
  hostfile,    // --hostfile: DeepSpeed/MPI "host slots=N" lines
  host_list,   // -H host1:4,host2:4
  slurm,       // SLURM_JOB_NODELIST and the per-node counts
};

struct Options {
  Mode mode = Mode::standalone;
  std::vector<std::string> command;

  std::string hosts_file;
  std::string hostfile;   // --hostfile
  std::string host_list;  // -H
  std::string include;    // --include, DeepSpeed's "host1:0,1@host2"
  std::string exclude;    // --exclude, the same syntax
  Launcher launcher = Launcher::automatic;
  HostSource host_source = HostSource::none;  // set when mode is Mode::hosts
  // Unset or "gpu": one per GPU, else 1; kNprocAuto, kNprocCpus: "auto", "cpu".
  std::optional<int> nproc_per_node;
  int nnodes = 1;
  // --nnodes MIN:MAX with a host list: an elastic job (0: every host not spare).
  std::size_t min_nodes = 0;
  std::size_t max_nodes = 0;
  int spares = 0;           // --spares N: the host list's last N hosts are spares
  int node_fail_limit = 2;  // rounds with a failed rank before a node is retired
  int join_timeout_s = 30;  // an elastic job starts with what joined by then
  // Where rank 0 writes its checkpoint, relative to the ranks' working
  // directory: copied to the coordinator as written, and to a new node 0.
  std::string checkpoint_dir = {};
  // Manual mode: this node's rank. Without --node-rank over several nodes,
  // the node that holds --master-addr (--rdzv-endpoint's host) is node 0 and
  // the others take ranks as they join (kRankByRendezvous until then).
  int node_rank = 0;
  bool node_rank_given = false;
  std::optional<bool> rdzv_is_host = {};  // --rdzv-conf is_host: decides node 0 instead
  std::string rdzv_endpoint = {};         // as given, for messages
  std::string local_addr = {};            // --local-addr: node 0's MASTER_ADDR, tried first
  bool standalone = false;                // --standalone: this machine only
  std::string master_addr;
  std::optional<int> master_port;
  int rdzv_port = 29400;
  bool rdzv_port_given = false;  // --rdzv-port on the command line: wins over the hosts file's
  int rdzv_timeout_s = 600;
  std::string secret_file;
  bool insecure_no_secret = false;  // manual mode open to any host that reaches the port

  static constexpr std::chrono::minutes kDefaultStallTime{30};

  std::string name;
  std::string log_dir;
  std::set<int> ranks_filter;        // empty: all ranks reach the terminal
  std::set<int> local_ranks_filter;  // --local-ranks-filter: the same by local rank
  // -r/--redirects: streams kept off the terminal (1 stdout, 2 stderr), for
  // every local rank or per local rank.
  int hidden_streams = 0;
  std::map<int, int> hidden_streams_by_local_rank = {};
  int grace_s = 10;
  // --hang-timeout: no progress for this long ends the job HUNG (exit 124).
  // Unset: a job is only noticed (STALLED, stacks, verdict) after
  // kDefaultStallTime; zero: not even that.
  std::optional<std::chrono::milliseconds> hang_timeout = {};
  std::string progress_pattern = {};  // --progress-pattern: what counts as progress
  int max_restarts = 0;
  int heartbeat_timeout_s = 15;
  bool dry_run = false;
  // The ranks' environment above each host's own (see launcher/config/environment.h).
  std::vector<std::string> env = {};  // --env K=V, in order
  std::string env_file = {};
  bool forward_env_defaults = true;           // --no-forward-env turns it off
  std::vector<std::string> forward_env = {};  // --forward-env NAMES
  // --workdir: the ranks' working directory on every host (must exist there);
  // empty: the coordinator's own when it exists there, else the home directory.
  std::string workdir = {};
  // --sync DIR: copied into `workdir` on every host before the ranks start;
  // `workdir` defaults to "~/<DIR's last component>" then.
  std::string sync_dir = {};
  bool sync_delete = false;          // --sync-delete: remove what DIR lacks (ignored files stay)
  bool detach = false;               // -d: the coordinator leaves the terminal
  std::string tensorboard_dir = {};  // on rank 0's host, relative to its workdir
  // --image: every rank runs in a container of it (a host's `image` wins);
  // agent/container_command.h has what each engine is given.
  std::string image = {};
  std::string container_engine = "auto";  // --container-engine
  std::string shm_size = {};              // --shm-size; empty: the host's /dev/shm (host IPC)
  std::vector<std::string> mounts = {};   // --mount SRC:DST[:ro]
  // --image-file FILE: sent to every host's image cache and run from there
  // (with --image: that name from it); image_file_name is its name in the
  // cache, set once it is hashed.
  std::string image_file = {};
  std::string image_file_name = {};
  // --sync-git URL[@REF]: every host checks out git_commit (resolved from
  // git_ref by the coordinator before anything starts) in <workdir>/code/NAME.
  std::string sync_git = {};
  std::string git_url = {};
  std::string git_ref = {};  // empty: the remote's HEAD
  std::string git_commit = {};
  int verbose = 0;
  bool quiet = false;
  bool no_skip = false;  // hold ranks back rather than skip lines on a slow terminal

  int ssh_parallel = 64;
  int ssh_timeout_s = 10;
  bool accept_new_host_keys = false;
  bool rdzv_via_ssh = false;  // agents reach the rendezvous through their SSH connection

  // A Python program (.py, -m, --run-path): command[0] is the interpreter, and
  // each host's is python_for(): --python, else the host's `python`, else
  // $DLAUNCH_PYTHON, else the first python3 on the PATH there.
  bool python_program = false;
  std::string python = {};      // --python
  std::string python_env = {};  // $DLAUNCH_PYTHON

  // deepspeed's command line (launcher/config/deepspeed_flags.h).
  int num_nodes = 0;                // --num_nodes: the host list's first N hosts; 0: all
  int num_gpus = 0;                 // --num_gpus: N ranks on each host (at most its slots)
  int ssh_port = 0;                 // --ssh_port: every SSH host's port unless it names one
  bool pass_local_rank = false;     // each rank gets --local_rank=N after its script
  bool deepspeed_line = false;      // deepspeed's command line: .deepspeed_env is read
  bool deepspeed_launcher = false;  // --launcher named one of deepspeed's (pdsh, openmpi, ...)

  // Said once when the job starts: flags accepted that change nothing, and
  // what a torchrun flag became.
  std::vector<std::string> notes = {};
};

// --nproc-per-node cpu: one rank per CPU of each host (the agent counts).
constexpr int kNprocCpus = -1;
// --nproc-per-node auto, torchrun's rule: one rank per GPU, else one per CPU.
// ("gpu", or no flag: one per GPU, else 1.)
constexpr int kNprocAuto = -2;
// A manual-mode node's rank before the rendezvous gives it one.
constexpr int kRankByRendezvous = -1;

// Why the command line gave no options to run with: --help or --version
// (exit code 0, the text to print), or a usage error (2, the message).
struct ParseStop {
  int exit_code = 0;
  std::string message;
};
using ParsedOptions = Result<Options, ParseStop>;

// One example line of --help: a command line and what it does.
struct HelpExample {
  std::string_view command_line;
  std::string_view what;
};

// A command as --help lists it. The command table lives above this library
// (launcher/cli/commands.h) and hands its rows down.
struct CommandHelp {
  std::string_view name;
  std::string_view summary;
  std::span<const HelpExample> examples;
};

// argv[0] is not looked at: it is "dlaunch", or "run" for `dlaunch run ...`.
// --help lists `commands` with their examples.
ParsedOptions parse_options(int argc, const char* const* argv,
                            std::span<const CommandHelp> commands = {});

// --hosts, --hostfile, -H/--host-list, --include, --exclude and --launcher,
// the same for `run` and `check`.
void add_host_list_options(CLI::App& app, Options& o);
// --ssh-parallel, --ssh-timeout, --accept-new-host-keys and --rdzv-via-ssh:
// one declaration for the job, `check` and `top`.
void add_ssh_options(CLI::App& app, Options& o);

// After parsing: sets o.host_source from those flags and, with the automatic
// launcher and `may_use_slurm`, from $SLURM_JOB_ID. A usage error when the
// flags conflict (two host sources, a filter with no host list, ...).
Result<void> resolve_host_source(Options& o, bool may_use_slurm);

// The flag that named the hosts ("--hosts", "-H", "--launcher slurm", ...).
std::string host_source_flag(const Options& o);

// The last component of --sync's directory, made absolute ("." is this
// directory's name); empty for "/".
std::string sync_dir_name(const std::string& dir);

// "0,3,5-7" -> {0,3,5,6,7}; nullopt on malformed input.
std::optional<std::set<int>> parse_rank_list(const std::string& text);

// $DLAUNCH_STATE_DIR, else $XDG_STATE_HOME/dlaunch/jobs, else ~/.local/state/dlaunch/jobs.
std::string default_log_dir();

}  // namespace dlaunch
