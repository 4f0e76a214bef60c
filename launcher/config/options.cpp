#include "launcher/config/options.h"

#include "common/did_you_mean.h"
#include "common/posix.h"
#include "common/text.h"

#include "common/version.h"
#include "launcher/config/container_options.h"
#include "launcher/config/deepspeed_flags.h"
#include "launcher/config/duration.h"
#include "launcher/config/git_source.h"
#include "launcher/config/python_program.h"
#include "launcher/config/torchrun_flags.h"

#include <sys/stat.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <regex>
#include <utility>

namespace dlaunch {

std::optional<std::set<int>> parse_rank_list(const std::string& text) {
  std::set<int> ranks;
  std::size_t start = 0;
  while (start <= text.size()) {
    const auto comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? comma : comma - start);
    if (item.empty()) return std::nullopt;
    try {
      std::size_t used = 0;
      const auto dash = item.find('-');
      if (dash == std::string::npos) {
        const int r = std::stoi(item, &used);
        if (used != item.size() || r < 0) return std::nullopt;
        ranks.insert(r);
      } else {
        const int lo = std::stoi(item.substr(0, dash), &used);
        if (used != dash) return std::nullopt;
        const std::string rest = item.substr(dash + 1);
        const int hi = std::stoi(rest, &used);
        if (used != rest.size() || lo < 0 || hi < lo || hi - lo > 1'000'000) return std::nullopt;
        for (int r = lo; r <= hi; ++r) ranks.insert(r);
      }
    } catch (const std::exception&) {
      return std::nullopt;
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return ranks;
}

namespace {

// CLI::ExistingDirectory says "Directory does not exist" of an existing file.
const CLI::Validator existing_directory(
    [](std::string& path) -> std::string {
      struct stat st {};
      if (::stat(path.c_str(), &st) != 0) return path + ": " + std::strerror(errno);
      if (!S_ISDIR(st.st_mode)) return path + " is a file, not a directory";
      return {};
    },
    "DIR");

// A CLI11 check from one of ours: CLI11 takes "" for a good value, else the
// message to show.
CLI::Validator cli_check(Result<void> (*check)(std::string_view), std::string shape) {
  return CLI::Validator(
      [check](std::string& text) {
        const auto checked = check(text);
        return checked ? std::string() : checked.error();
      },
      std::move(shape));
}

// CLI11 would say "Usage: dlaunch [OPTIONS]": the program and its arguments,
// and the -- that may come before them, belong in it.
class JobUsage : public CLI::Formatter {
 public:
  std::string make_usage(const CLI::App*, std::string) const override {
    return "Usage: dlaunch [OPTIONS] [--] PROGRAM [ARGS...]\n       dlaunch COMMAND [OPTIONS]\n";
  }
};

// "Commands:" and "Examples:" after the options, each in two aligned columns.
std::string help_footer(std::span<const CommandHelp> commands) {
  std::size_t name_width = 0;
  std::size_t example_width = 0;
  for (const auto& c : commands) {
    name_width = std::max(name_width, c.name.size());
    for (const auto& e : c.examples) example_width = std::max(example_width, e.command_line.size());
  }
  auto row = [](std::string_view left, std::size_t width, std::string_view right) {
    std::string line = "  " + std::string(left);
    if (!right.empty()) line += std::string(width - left.size() + 2, ' ') + std::string(right);
    return line + "\n";
  };
  if (commands.empty()) return "";
  std::string text = "Commands (dlaunch COMMAND --help shows a command's options):\n";
  for (const auto& c : commands) text += row(c.name, name_width, c.summary);
  text += "\nExamples:\n";
  for (const auto& c : commands) {
    for (const auto& e : c.examples) text += row(e.command_line, example_width, e.what);
  }
  text.pop_back();  // CLI11 ends the help with its own newline
  return text;
}

// "N" (manual mode's node count) or torchrun's "MIN:MAX" (an elastic job over
// a host list); the error says what is wrong with it.
Result<void> parse_nnodes(const std::string& text, Options& o) {
  constexpr long kMost = 1 << 20;
  auto number = [&](std::string_view part) -> std::optional<long> {
    if (part.empty() || part.size() > 8 ||
        part.find_first_not_of("0123456789") != std::string_view::npos)
      return std::nullopt;
    const long n = std::stol(std::string(part));
    if (n < 1 || n > kMost) return std::nullopt;
    return n;
  };
  const auto colon = text.find(':');
  if (colon == std::string::npos) {
    const auto n = number(text);
    if (!n)
      return fail("expected a node count from 1 to " + std::to_string(kMost) + ", or MIN:MAX");
    o.nnodes = static_cast<int>(*n);
    return {};
  }
  const auto low = number(std::string_view(text).substr(0, colon));
  const auto high = number(std::string_view(text).substr(colon + 1));
  if (!low || !high)
    return fail("expected MIN:MAX, two node counts from 1 to " + std::to_string(kMost));
  if (*low > *high) return fail("MIN is above MAX");
  o.min_nodes = static_cast<std::size_t>(*low);
  o.max_nodes = static_cast<std::size_t>(*high);
  return {};
}

// "unknown option '--nprocs'; did you mean '--nproc-per-node'?": the first
// word of `words` that looks like an option, with the closest of the app's
// own spellings (or one it starts like: --nprocs, --nproc-per-node).
std::string unknown_option(const CLI::App& app, const std::vector<std::string>& words) {
  std::string word = words.front();
  for (const auto& w : words) {
    if (w.starts_with('-')) {
      word = w;
      break;
    }
  }
  const std::string name = word.substr(0, word.find('='));
  std::vector<std::string> spellings;
  for (const CLI::Option* option : app.get_options()) {
    for (const auto& l : option->get_lnames()) spellings.push_back("--" + l);
    for (const auto& s : option->get_snames()) spellings.push_back("-" + s);
  }
  const std::vector<std::string_view> candidates(spellings.begin(), spellings.end());
  auto guess = did_you_mean(name, candidates);
  if (!guess && name.size() > 4) {
    const std::string stem = name.ends_with('s') ? name.substr(0, name.size() - 1) : name;
    for (const auto& candidate : spellings) {
      if (candidate.starts_with(stem)) {
        guess = candidate;
        break;
      }
    }
  }
  std::string message = "unknown option '" + name + "'";
  if (guess) message += "; did you mean '" + *guess + "'?";
  return message + " (dlaunch --help lists the options; the program and its own options " +
         "follow them, or come after --)";
}

}  // namespace

void add_ssh_options(CLI::App& app, Options& o) {
  app.add_option("--ssh-parallel", o.ssh_parallel, "SSH connections set up at once")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096))
      ->group("SSH");
  app.add_option("--ssh-timeout", o.ssh_timeout_s, "SSH connect timeout in seconds")
      ->capture_default_str()
      ->check(CLI::Range(1, 3600))
      ->group("SSH");
  app.add_flag("--accept-new-host-keys", o.accept_new_host_keys,
               "record unknown SSH host keys (changed keys are always refused)")
      ->group("SSH");
  app.add_flag("--rdzv-via-ssh", o.rdzv_via_ssh,
               "agents reach the rendezvous through a reverse forward on their SSH connection "
               "(coordinator behind NAT or a firewall); as [rendezvous] via = \"ssh\"")
      ->group("SSH");
}

void add_host_list_options(CLI::App& app, Options& o) {
  // deepspeed's launchers too: pdsh and the MPIs start processes over SSH,
  // which is what dlaunch's agents do.
  static const std::map<std::string, Launcher> kLaunchers{
      {"ssh", Launcher::ssh},   {"slurm", Launcher::slurm}, {"local", Launcher::local},
      {"pdsh", Launcher::ssh},  {"openmpi", Launcher::ssh}, {"mvapich", Launcher::ssh},
      {"mpich", Launcher::ssh}, {"impi", Launcher::ssh}};
  app.add_option("--hosts", o.hosts_file, "TOML hosts file (see hosts.example.toml)")
      ->check(CLI::ExistingFile)
      ->group("Hosts");
  app.add_option("--hostfile", o.hostfile,
                 "DeepSpeed/MPI hostfile: one 'host slots=N' per line, '#' comments")
      ->check(CLI::ExistingFile)
      ->group("Hosts");
  app.add_option("-H,--host-list", o.host_list,
                 "hosts as for Horovod: host1:4,host2:4 (no ':N': one rank per GPU, else 1)")
      ->group("Hosts");
  app.add_option("-i,--include", o.include,
                 "only these hosts of the host list, as for DeepSpeed: host1@host2:0,1 (':' GPU "
                 "indices: only those GPUs, through CUDA_VISIBLE_DEVICES)")
      ->group("Hosts");
  app.add_option("--exclude", o.exclude,
                 "leave out these hosts, or with ':' GPU indices these GPUs of a host: "
                 "host1@host2:0,1")
      ->group("Hosts");
  app.add_option_function<std::string>(
         "--launcher",
         [&o](std::string name) {
           name = ascii_lower(name);
           o.launcher = kLaunchers.at(name);
           if (name != "ssh" && name != "slurm" && name != "local") {
             o.deepspeed_launcher = true;
             o.notes.push_back("deepspeed's --launcher " + name +
                               ": dlaunch starts its agents over SSH itself (--launcher ssh)");
           }
         },
         "where hosts come from: ssh (--hosts, --hostfile or -H), slurm (SLURM_JOB_NODELIST, "
         "ranks per node from SLURM_NTASKS_PER_NODE, SLURM_GPUS_ON_NODE or "
         "SLURM_TASKS_PER_NODE) or local (this machine only); deepspeed's pdsh, openmpi, "
         "mvapich, mpich and impi are ssh; default: slurm inside a Slurm "
         "job when no host list is given. Agents start over SSH (fork/exec for loopback "
         "hosts), or with slurm as one srun job step")
      ->check(CLI::IsMember(kLaunchers, CLI::ignore_case))
      ->group("Hosts");
}

std::string host_source_flag(const Options& o) {
  switch (o.host_source) {
    case HostSource::hosts_file:
      return "--hosts";
    case HostSource::hostfile:
      return "--hostfile";
    case HostSource::host_list:
      return "-H";
    case HostSource::slurm:
      return o.launcher == Launcher::slurm ? "--launcher slurm" : "a Slurm job (SLURM_JOB_ID)";
    case HostSource::none:
      break;
  }
  return "";
}

Result<void> resolve_host_source(Options& o, bool may_use_slurm) {
  // deepspeed's -H is its --hostfile: a -H that names a file is one. (A name
  // too long to be a path is not one: is_regular_file's error is no answer.)
  std::error_code not_a_path;
  if (!o.host_list.empty() && o.hostfile.empty() &&
      o.host_list.find_first_of(",:") == std::string::npos &&
      std::filesystem::is_regular_file(o.host_list, not_a_path)) {
    o.notes.push_back("-H " + o.host_list + " is a file: read as --hostfile (deepspeed's -H)");
    o.hostfile = std::exchange(o.host_list, {});
  }
  std::vector<std::pair<HostSource, std::string>> given;
  if (!o.hosts_file.empty()) given.emplace_back(HostSource::hosts_file, "--hosts");
  if (!o.hostfile.empty()) given.emplace_back(HostSource::hostfile, "--hostfile");
  if (!o.host_list.empty()) given.emplace_back(HostSource::host_list, "-H");
  if (o.launcher == Launcher::slurm) given.emplace_back(HostSource::slurm, "--launcher slurm");
  if (given.size() > 1) {
    return fail(given[0].second + " and " + given[1].second + " both name the hosts: give one");
  }
  if (o.launcher == Launcher::local && !given.empty()) {
    return fail("--launcher local runs on this machine only: drop " + given[0].second);
  }
  if (o.launcher == Launcher::ssh && given.empty()) {
    return fail("--launcher ssh needs the hosts: --hosts, --hostfile or -H");
  }
  o.host_source = given.empty() ? HostSource::none : given[0].first;
  if (o.host_source == HostSource::none && o.launcher == Launcher::automatic && may_use_slurm) {
    if (const char* job = std::getenv("SLURM_JOB_ID"); job && *job)
      o.host_source = HostSource::slurm;
  }
  for (const auto* filter : {&o.include, &o.exclude}) {
    if (!filter->empty() && o.host_source == HostSource::none) {
      return fail(
          std::string(filter == &o.include ? "--include" : "--exclude") +
          " picks from a host list: give --hosts, --hostfile or -H (or run in a Slurm job)");
    }
  }
  if (!o.include.empty() && !o.exclude.empty()) {
    return fail("--include and --exclude cannot be combined: give one of them");
  }
  return {};
}

std::string default_log_dir() {
  if (const char* dir = std::getenv("DLAUNCH_STATE_DIR"); dir && *dir) return dir;
  if (const char* xdg = std::getenv("XDG_STATE_HOME"); xdg && *xdg) {
    return std::string(xdg) + "/dlaunch/jobs";
  }
  // cron and `env -i` may leave HOME unset: the passwd entry's home is the
  // same directory an interactive `dlaunch list` looks in.
  return home_directory() + "/.local/state/dlaunch/jobs";
}

std::string sync_dir_name(const std::string& dir) {
  std::error_code ec;
  auto path = std::filesystem::absolute(dir, ec).lexically_normal();
  if (!path.has_filename()) path = path.parent_path();
  return path == path.root_path() ? std::string() : path.filename().string();
}

namespace {

// What the option groups read as text or into a holder of their own, checked
// once the whole line is parsed (parse_command_line).
struct OptionTexts {
  std::string nproc;
  std::string ranks_filter;
  std::string hang_timeout;
  std::string nnodes;
  std::optional<int> node_rank;
  PythonChoice python;
  bool no_forward_env = false;
  CLI::Option* rdzv_port = nullptr;
};

// "Ranks" in --help: how many per node, how they stop, restart and hang.
void add_rank_options(CLI::App& app, Options& o, OptionTexts& t) {
  app.add_option("--nproc-per-node,--nproc_per_node,-n", t.nproc,
                 "ranks per node: a number, 'gpu' (one per GPU, else 1), 'auto' (one per GPU, else "
                 "one per CPU, as torchrun's) or 'cpu' (one per CPU)")
      ->group("Ranks");
  app.add_option("--nnodes", t.nnodes,
                 "number of nodes (manual mode), or MIN:MAX: an elastic job that starts with MIN "
                 "to MAX nodes and goes on after a loss while MIN remain (a host list, or the "
                 "same line on each node)")
      ->group("Ranks");
  app.add_option("--node-fail-limit", o.node_fail_limit,
                 "rounds in which a node's ranks failed before it is retired, in a job with "
                 "spares or MIN:MAX (0: never)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1000))
      ->group("Ranks");
  app.add_option("--node-rank,--node_rank,--rank", t.node_rank, "this node's rank (manual mode)")
      ->check(CLI::NonNegativeNumber)
      ->group("Ranks");
  app.add_option("--grace", o.grace_s, "seconds between SIGTERM and SIGKILL when stopping ranks")
      ->capture_default_str()
      ->check(CLI::Range(0, 3600))
      ->group("Ranks");
  app.add_option("--hang-timeout", t.hang_timeout,
                 "no progress for this long (90s, 10m, 2h): gather every rank's stack, name the "
                 "suspect and end the job HUNG, exit 124 (0: never; default: only say so after "
                 "30 min)")
      ->group("Ranks");
  app.add_option("--progress-pattern", o.progress_pattern,
                 "only output lines matching this regular expression count as progress (e.g. "
                 "'step [0-9]+')")
      ->group("Ranks");
  app.add_option("--max-restarts,--max_restarts", o.max_restarts,
                 "restart all ranks up to N times after a failure")
      ->capture_default_str()
      ->check(CLI::Range(0, 1000))
      ->group("Ranks");
}

// "Hosts" in --help: the host list's spares (the list itself: add_host_list_options).
void add_spares_option(CLI::App& app, Options& o) {
  app.add_option("--spares", o.spares,
                 "the host list's last N hosts are spares: they join and are probed, and run "
                 "ranks only in place of a lost node")
      ->check(CLI::Range(0, 1 << 20))
      ->group("Hosts");
}

// "Rendezvous and network" in --help: the rendezvous, node 0's address and port, the secret.
void add_rendezvous_options(CLI::App& app, Options& o, OptionTexts& t) {
  app.add_option("--join-timeout", o.join_timeout_s,
                 "seconds an elastic job waits for all its hosts before it starts with those "
                 "that joined (at least MIN)")
      ->capture_default_str()
      ->check(CLI::Range(1, 86400))
      ->group("Rendezvous and network");
  app.add_option("--master-addr,--master_addr", o.master_addr,
                 "node 0's address: rendezvous host and MASTER_ADDR (manual mode)")
      ->group("Rendezvous and network");
  app.add_option("--master-port,--master_port", o.master_port,
                 "MASTER_PORT for the ranks (default: a free port found on node 0)")
      ->check(CLI::Range(1, 65535))
      ->group("Rendezvous and network");
  t.rdzv_port =
      app.add_option(
             "--rdzv-port", o.rdzv_port,
             "rendezvous TCP port on node 0 (manual mode), or of the coordinator (over the hosts "
             "file's [rendezvous] port; default there: any free port)")
          ->group("Rendezvous and network");
  t.rdzv_port->capture_default_str()->check(CLI::Range(1, 65535));
  app.add_option("--rdzv-timeout", o.rdzv_timeout_s, "seconds to wait for every node to join")
      ->capture_default_str()
      ->check(CLI::Range(1, 86400 * 7))
      ->group("Rendezvous and network");
  app.add_option("--secret-file", o.secret_file,
                 "file holding the job's shared secret, the same on every node (manual mode; "
                 "default $DLAUNCH_SECRET_FILE; else $DLAUNCH_SECRET holds it; else node 0 "
                 "makes one and prints the line for the other nodes)")
      ->group("Rendezvous and network");
  app.add_flag("--insecure-no-secret", o.insecure_no_secret,
               "manual mode without a secret: any host that reaches the rendezvous port can join")
      ->group("Rendezvous and network");
  app.add_option("--heartbeat-timeout", o.heartbeat_timeout_s,
                 "seconds of silence after which a node is declared dead")
      ->capture_default_str()
      ->check(CLI::Range(2, 3600))
      ->group("Rendezvous and network");
}

// "Job" in --help: the job: its name, checkpoints, detaching, a dry run.
void add_job_options(CLI::App& app, Options& o) {
  app.add_option("--checkpoint-dir", o.checkpoint_dir,
                 "where rank 0 writes its checkpoint (relative to its working directory; the "
                 "ranks get it as DLAUNCH_CHECKPOINT_DIR): each complete file is copied into the "
                 "job's directory, and to a new node 0 before a round starts there")
      ->group("Job");
  app.add_option("--name", o.name, "job name (default: program name and a timestamp)")
      ->group("Job");
  app.add_flag("-d,--detach", o.detach,
               "leave the terminal: print the job name once it is PENDING and return 0; the job "
               "goes on (dlaunch logs NAME -f, dlaunch stop NAME)")
      ->group("Job");
  app.add_flag("--dry-run", o.dry_run, "print the plan (hosts, ranks, environment); start nothing")
      ->group("Job");
}

// "Output and logs" in --help: what reaches the terminal and the logs.
void add_output_options(CLI::App& app, Options& o, OptionTexts& t) {
  app.add_option("--log-dir,--log_dir", o.log_dir,
                 "where job logs go (default $DLAUNCH_STATE_DIR or ~/.local/state/dlaunch/jobs)")
      ->group("Output and logs");
  app.add_option("--ranks-filter", t.ranks_filter,
                 "only these ranks reach the terminal, e.g. 0,3 or 0-3 (files get all)")
      ->group("Output and logs");
  app.add_option("--tensorboard-dir", o.tensorboard_dir,
                 "TensorBoard event dir on rank 0's host (relative to its working directory): "
                 "its files are copied into the job's directory as they grow")
      ->group("Output and logs");
  app.add_flag("-v,--verbose", o.verbose, "more diagnostics (repeat for debug)")
      ->group("Output and logs");
  app.add_flag("-q,--quiet", o.quiet, "no rank output on the terminal (files still get it)")
      ->group("Output and logs");
  app.add_flag("--no-skip", o.no_skip,
               "never skip lines on a terminal that falls behind: hold the ranks back instead "
               "(for scripts reading dlaunch's output through a slow pipe)")
      ->group("Output and logs");
}

// "Environment and code" in --help: the ranks' environment, the program's Python, code sent to the
// hosts.
void add_environment_options(CLI::App& app, Options& o, OptionTexts& t) {
  app.add_option("-e,--env", o.env,
                 "KEY=VALUE for every rank on every host (repeatable; wins over the hosts "
                 "file's env and forwarded variables)")
      ->allow_extra_args(false)  // one KEY=VALUE each time: `-e A=1 prog` keeps prog
      ->group("Environment and code");
  app.add_option("--env-file", o.env_file, "KEY=VALUE lines (# comments) for every rank, as --env")
      ->check(CLI::ExistingFile)
      ->group("Environment and code");
  app.add_flag("-m,--module", t.python.module,
               "the program is a Python module: each rank runs PYTHON -u -m PROGRAM ARGS "
               "(as torchrun -m)")
      ->group("Environment and code");
  app.add_flag("--no-python,--no_python", t.python.no_python,
               "run a PROGRAM that ends in .py as it is (by default it runs as PYTHON -u PROGRAM, "
               "as torchrun runs it)")
      ->group("Environment and code");
  app.add_option("--python", t.python.python,
                 "the Python for .py programs and -m (default: $DLAUNCH_PYTHON, else the first "
                 "python3 on each rank's PATH)")
      ->group("Environment and code");
  app.add_flag("--no-forward-env", t.no_forward_env,
               "do not forward this shell's NCCL_*, CUDA_* (not CUDA_VISIBLE_DEVICES), TORCH_*, "
               "OMP_*, HF_*, PYTHONPATH and VIRTUAL_ENV to every host")
      ->group("Environment and code");
  app.add_option("--forward-env", o.forward_env,
                 "also forward these variables, e.g. PATH,LD_LIBRARY_PATH or MY_* "
                 "(comma-separated or repeated)")
      ->delimiter(',')
      ->allow_extra_args(false)
      ->group("Environment and code");
  app.add_option("--workdir,--chdir", o.workdir,
                 "the ranks' working directory on every host (default: this one where it exists, "
                 "else the home directory)")
      ->group("Environment and code");
  app.add_option("--sync", o.sync_dir,
                 "copy this local directory into the ranks' working directory on every host "
                 "before the ranks start: changed files only, modes and symlinks kept, .git and "
                 ".dlaunchignore patterns skipped (default --workdir: ~/<its name>, created)")
      ->check(existing_directory)
      ->group("Environment and code");
  app.add_option("--sync-git", o.sync_git,
                 "check out one commit of this repository in <workdir>/code/<name> on every host "
                 "before the ranks start: URL[@BRANCH|TAG|COMMIT], resolved here once (default: "
                 "the remote's HEAD); the host's git credentials apply")
      ->group("Environment and code");
  app.add_flag("--sync-delete", o.sync_delete,
               "with --sync: also delete files in the working directory that the local "
               "directory lacks (ignored ones stay)")
      ->group("Environment and code");
}

// "Containers" in --help: ranks in containers.
void add_container_options(CLI::App& app, Options& o) {
  app.add_option("--image", o.image,
                 "run every rank in a container of this image (podman, docker, apptainer or "
                 "enroot on each host; a host's `image` wins): host network and IPC, its GPUs, "
                 "the working directory at the same path, the rank's environment, the SSH user")
      ->group("Containers");
  app.add_option("--image-file", o.image_file,
                 "run every rank in a container of this image file, sent to every host (no "
                 "registry): a `podman save`/`docker save` archive or a .sif; each host keeps it "
                 "in ~/.cache/dlaunch/images by SHA-256 and loads it once, so a next job sends "
                 "nothing. With --image: the name to run from the archive")
      ->group("Containers");
  app.add_option("--container-engine", o.container_engine,
                 "with --image: auto (the first of podman, docker, apptainer, singularity, enroot "
                 "on each host, said per host), podman, docker, apptainer or enroot")
      ->capture_default_str()
      ->check(CLI::IsMember(
          std::vector<std::string>(std::begin(kContainerEngines), std::end(kContainerEngines))))
      ->group("Containers");
  app.add_option("--shm-size", o.shm_size,
                 "with --image (podman, docker): a private /dev/shm of this size per container, "
                 "e.g. 16g (default: the host's /dev/shm, shared as for plain ranks)")
      ->check(cli_check(check_shm_size, "SIZE"))
      ->group("Containers");
  app.add_option("--mount", o.mounts,
                 "with --image: bind-mount SRC:DST[:ro] into every container (repeatable), e.g. "
                 "/data/imagenet:/data:ro")
      ->allow_extra_args(false)
      ->check(cli_check(check_mount, "SRC:DST[:ro]"))
      ->group("Containers");
}

// Whether the line names hosts (--hosts, --hostfile, -H, or Slurm's).
bool host_list_given(const Options& o) {
  return !o.hosts_file.empty() || !o.hostfile.empty() || !o.host_list.empty() ||
         o.launcher == Launcher::slurm;
}

// "torchrun" or "deepspeed" when the ranks' program is that launcher itself
// (torchrun's modules count as torchrun), else empty.
std::string launcher_in_ranks(const std::vector<std::string>& command) {
  for (std::size_t i = 0; i < command.size() && i < 4; ++i) {
    const std::string& word = command[i];
    const std::string name = word.substr(word.rfind('/') + 1);
    if (name == "torchrun" || name == "torch.distributed.run" || name == "torch.distributed.launch")
      return "torchrun";
    if (name == "deepspeed" || name == "deepspeed.launcher.runner") return "deepspeed";
  }
  return "";
}

// The values read as text, now that the whole line is parsed: the program
// (a Python one's interpreter), ranks per node, the hang timeout, the ranks
// filter, --nnodes, --sync-git, and torchrun's and deepspeed's flags.
Result<void> apply_option_texts(OptionTexts& t, const TorchrunFlags& torchrun,
                                const DeepspeedFlags& deepspeed, Options& o) {
  if (o.command.empty()) return fail("no program given: dlaunch [OPTIONS] -- PROG [ARGS...]");
  if (o.command[0].empty()) return fail("the program name is empty (dlaunch -- '' ...)");
  if (const char* env = std::getenv("DLAUNCH_PYTHON")) t.python.python_env = env;
  t.python.run_path = torchrun.run_path;
  const std::size_t words = o.command.size();
  auto command = python_command(std::move(o.command), t.python);
  if (!command) return fail(command.error());
  o.command = std::move(*command);
  o.python_program = o.command.size() > words;
  o.python = t.python.python;
  o.python_env = t.python.python_env.value_or("");
  if (t.nproc == "cpu") {
    o.nproc_per_node = kNprocCpus;
  } else if (t.nproc == "auto") {
    o.nproc_per_node = kNprocAuto;
  } else if (t.nproc == "xpu") {
    return fail(
        "--nproc-per-node xpu: dlaunch counts NVIDIA GPUs ('gpu' or 'auto'); give a number");
  } else if (!t.nproc.empty() && t.nproc != "auto" && t.nproc != "gpu") {
    int n = 0;
    const auto [end, error] = std::from_chars(t.nproc.data(), t.nproc.data() + t.nproc.size(), n);
    if (error != std::errc() || end != t.nproc.data() + t.nproc.size() || n < 1 || n > 4096) {
      return fail(
          "--nproc-per-node: expected a number from 1 to 4096, 'auto', 'gpu' or 'cpu', got '" +
          t.nproc + "'");
    }
    o.nproc_per_node = n;
  }
  if (!t.hang_timeout.empty()) {
    auto timeout = parse_duration(t.hang_timeout);
    if (!timeout) return fail("--hang-timeout: " + timeout.error());
    o.hang_timeout = *timeout;
  }
  if (!o.progress_pattern.empty()) {
    try {
      (void)std::regex(o.progress_pattern);
    } catch (const std::regex_error& e) {
      return fail("--progress-pattern '" + o.progress_pattern + "': not a regular expression (" +
                  e.what() + ")");
    }
  }
  if (!t.ranks_filter.empty()) {
    auto ranks = parse_rank_list(t.ranks_filter);
    if (!ranks) {
      return fail("--ranks-filter: expected ranks like 0,3 or 0-3, got '" + t.ranks_filter + "'");
    }
    o.ranks_filter = *ranks;
  }
  if (!t.nnodes.empty()) {
    if (auto parsed = parse_nnodes(t.nnodes, o); !parsed)
      return fail("--nnodes " + t.nnodes + ": " + parsed.error());
  }
  if (!o.sync_git.empty()) {
    auto source = parse_git_source(o.sync_git);
    if (!source) return fail(source.error());
    o.git_url = source->url;
    o.git_ref = source->ref;
  }
  if (auto launcher = launcher_in_ranks(o.command);
      !launcher.empty() && o.nproc_per_node.value_or(0) != 1) {
    o.notes.push_back("the program is " + launcher + " itself: every rank runs its own " +
                      launcher + ", which starts ranks of its own; dlaunch does " + launcher +
                      "'s work: give it the script and " + launcher +
                      "'s flags (dlaunch --nproc-per-node 2 train.py), or -n 1 for one " +
                      launcher + " per host");
  }
  if (auto applied = apply_torchrun_flags(torchrun, o); !applied) return fail(applied.error());
  if (auto applied = apply_deepspeed_flags(deepspeed, o); !applied) return fail(applied.error());
  // deepspeed's -e is its --exclude: a value without '=' is no KEY=VALUE,
  // on a line with a host list to exclude from (else --env says what it wants).
  const bool host_list = host_list_given(o);
  for (auto it = o.env.begin(); it != o.env.end();) {
    if (it->find('=') != std::string::npos || !o.exclude.empty() || !host_list) {
      ++it;
      continue;
    }
    o.notes.push_back("-e " + *it + " has no '=': read as --exclude (deepspeed's -e)");
    o.exclude = *it;
    it = o.env.erase(it);
  }
  return {};
}

// Which mode the line asks for: one machine, a host list, or manual mode
// (--nnodes/--node-rank/--master-addr on each node), and what each excludes.
Result<void> choose_mode(const OptionTexts& t, Options& o) {
  // With a host list, --master-addr is the MASTER_ADDR to try first (as the
  // hosts file's master_address), not a switch to manual mode.
  const bool hosts_listed = host_list_given(o);
  if (o.standalone && (hosts_listed || t.node_rank.has_value())) {
    return fail(std::string("--standalone runs on this machine only: drop ") +
                (t.node_rank ? "--node-rank" : "the host list"));
  }
  if (!o.rdzv_endpoint.empty() && hosts_listed) {
    return fail(
        "--rdzv-endpoint names node 0 for nodes started by hand; with a host list "
        "dlaunch runs the rendezvous itself: drop --rdzv-endpoint");
  }
  const bool manual = !o.standalone && (o.nnodes > 1 || t.node_rank.has_value() ||
                                        (!o.master_addr.empty() && !hosts_listed));
  // torchrun's way: `--nnodes MIN:MAX --node-rank R --master-addr A` on each
  // node. Node 0 runs with MAX places and admits late nodes as spares.
  if (manual && o.max_nodes != 0) o.nnodes = static_cast<int>(o.max_nodes);
  // Manual flags inside a Slurm job mean manual mode, not Slurm's hosts.
  if (auto resolved = resolve_host_source(o, !manual); !resolved) return fail(resolved.error());
  if (o.host_source != HostSource::none && manual) {
    return fail(host_source_flag(o) +
                " cannot be combined with --nnodes/--node-rank: the host list gives "
                "the nodes");
  }
  if (o.host_source != HostSource::none) {
    o.mode = Mode::hosts;
  } else if (o.max_nodes != 0 && !manual) {
    return fail("--nnodes " + t.nnodes +
                ": a range of nodes needs a host list (--hosts, --hostfile, -H or a Slurm "
                "job), or manual mode on each node (--node-rank R --master-addr NODE0)");
  } else if (o.spares != 0) {
    return fail("--spares needs a host list (--hosts, --hostfile, -H or a Slurm job)");
  } else if (manual) {
    o.mode = Mode::manual;
    o.node_rank_given = t.node_rank.has_value();
    o.node_rank = t.node_rank.value_or(0);
    if (o.node_rank >= o.nnodes) {
      return fail("--node-rank " + std::to_string(o.node_rank) + " must be below --nnodes " +
                  std::to_string(o.nnodes));
    }
    if (o.master_addr.empty() && o.nnodes > 1) {
      return fail("--master-addr is required with --nnodes " + t.nnodes + " (node 0's address)");
    }
    if (o.master_addr.empty()) o.master_addr = "127.0.0.1";
  }
  if (!o.local_addr.empty() && o.mode != Mode::manual) {
    o.notes.push_back(
        "torchrun's --local-addr has no effect without --nnodes: it names node 0's MASTER_ADDR "
        "in manual mode; elsewhere dlaunch proves which address every node reaches");
  }
  return {};
}

// Flags that mean something in some modes only, and the defaults taken from
// the environment.
Result<void> check_flags_for_mode(Options& o) {
  if (o.mode != Mode::hosts && (o.accept_new_host_keys)) {
    return fail("--accept-new-host-keys needs --hosts, --hostfile, -H or a Slurm job");
  }
  if (o.mode != Mode::hosts && o.rdzv_via_ssh) {
    return fail("--rdzv-via-ssh needs --hosts, --hostfile, -H or a Slurm job");
  }
  // Slurm's hosts start their agents under srun: there is no SSH connection.
  if (o.host_source == HostSource::slurm && o.rdzv_via_ssh) {
    return fail("--rdzv-via-ssh has no SSH connection to go through with " + host_source_flag(o) +
                ": the agents start under srun");
  }
  if (o.sync_delete && o.sync_dir.empty()) return fail("--sync-delete needs --sync DIR");
  if (!o.sync_dir.empty()) {
    if (o.mode == Mode::manual) {
      return fail(
          "--sync needs --hosts, --hostfile, -H, a Slurm job or one machine; in manual mode each "
          "node starts its own agent");
    }
    if (o.workdir.empty()) {
      // The same tree on every host, under the home directory of the SSH user.
      const auto name = sync_dir_name(o.sync_dir);
      if (name.empty()) return fail("--sync " + o.sync_dir + ": give --workdir too");
      o.workdir = "~/" + name;
    }
  }
  if (!o.image_file.empty() && o.mode == Mode::manual) {
    return fail(
        "--image-file needs --hosts, --hostfile, -H, a Slurm job or one machine; in manual mode "
        "load the image on each node (podman load -i FILE) and give --image");
  }
  if (o.secret_file.empty()) {
    if (const char* f = std::getenv("DLAUNCH_SECRET_FILE"); f && *f) o.secret_file = f;
  }
  if (o.insecure_no_secret && o.mode != Mode::manual)
    return fail(
        "--insecure-no-secret is for manual mode (--nnodes N --node-rank R); "
        "dlaunch makes each job's secret when it starts the agents itself");
  if (o.log_dir.empty()) o.log_dir = default_log_dir();
  return {};
}

// parse_options without naming the PET_* variables it read in an error;
// `env_said` gets them.
ParsedOptions parse_command_line(int argc, const char* const* argv,
                                 std::span<const CommandHelp> commands, std::string& env_said) {
  Options o;
  CLI::App app{"dlaunch: start distributed PyTorch/LibTorch training on plain hosts", "dlaunch"};
  app.set_version_flag("--version", std::string("dlaunch ") + kVersion);
  app.footer(help_footer(commands));
  app.formatter(std::make_shared<JobUsage>());
  // The program is the first word that is no option of ours nor an option's
  // value, or what follows "--": everything after it is the program's, byte
  // for byte, "--" and --help included (torchrun's way). CLI11 stops there.
  app.prefix_command(true);
  // An option given twice takes the last value, as argparse does (torchrun,
  // deepspeed); lists (-e, --mount, ...) keep every value.
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);

  OptionTexts t;
  add_host_list_options(app, o);
  add_rank_options(app, o, t);
  add_spares_option(app, o);
  add_rendezvous_options(app, o, t);
  add_job_options(app, o);
  add_output_options(app, o, t);
  add_environment_options(app, o, t);
  add_container_options(app, o);
  add_ssh_options(app, o);
  TorchrunFlags torchrun;
  add_torchrun_options(app, torchrun);
  DeepspeedFlags deepspeed;
  add_deepspeed_options(app, deepspeed);

  // Words CLI11 does not know come back in remaining(), checked below: an
  // unknown option is named, never taken for the program.
  std::vector<std::string> reversed;
  for (int i = argc - 1; i >= 1; --i) reversed.emplace_back(argv[i]);
  // PET_* first: the command line's own flags come later and win.
  const auto from_env = torchrun_env_arguments(app);
  reversed.insert(reversed.end(), from_env.words.rbegin(), from_env.words.rend());
  env_said = from_env.said;
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    return fail(ParseStop{0, app.help()});
  } catch (const CLI::CallForVersion&) {
    return fail(ParseStop{0, std::string("dlaunch ") + kVersion});
  } catch (const CLI::ParseError& e) {
    return fail(ParseStop{2, e.what()});
  }
  std::vector<std::string> rest = app.remaining();
  if (!rest.empty() && rest.front() == "--") {
    o.command.assign(rest.begin() + 1, rest.end());
  } else if (!rest.empty() && rest.front().starts_with('-')) {
    return fail(ParseStop{2, unknown_option(app, rest)});
  } else {
    o.command = std::move(rest);
  }
  o.forward_env_defaults = !t.no_forward_env;
  o.rdzv_port_given = t.rdzv_port->count() > 0;

  auto usage_error = [](std::string message) { return fail(ParseStop{2, std::move(message)}); };
  if (auto applied = apply_option_texts(t, torchrun, deepspeed, o); !applied)
    return usage_error(applied.error());
  if (auto chosen = choose_mode(t, o); !chosen) return usage_error(chosen.error());
  if (auto checked = check_flags_for_mode(o); !checked) return usage_error(checked.error());
  return o;
}

}  // namespace

ParsedOptions parse_options(int argc, const char* const* argv,
                            std::span<const CommandHelp> commands) {
  std::string env_said;
  ParsedOptions result = parse_command_line(argc, argv, commands, env_said);
  // A flag the user never typed: say where it came from.
  if (!result && result.error().exit_code == 2 && !env_said.empty()) {
    ParseStop stop = result.error();
    stop.message += " (flags read from the environment: " + env_said + ")";
    return fail(std::move(stop));
  }
  return result;
}

}  // namespace dlaunch
