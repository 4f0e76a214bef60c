// Everything the user asked for on the command line, parsed and validated but
// not yet acted on. parse_options is pure apart from reading the environment
// for defaults, so usage errors are unit-tested without starting anything.
#pragma once

#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace dlaunch {

enum class Mode {
  standalone,  // one machine: --nproc-per-node N -- PROG
  hosts,       // --hosts FILE: agents started locally or over SSH
  manual,      // --nnodes M --node-rank R --master-addr A: run by hand on each node
};

struct Options {
  Mode mode = Mode::standalone;
  std::vector<std::string> command;

  std::string hosts_file;
  std::optional<int> nproc_per_node;  // unset or "auto": one per GPU, else 1
  int nnodes = 1;
  int node_rank = 0;
  std::string master_addr;
  std::optional<int> master_port;
  int rdzv_port = 29400;
  int rdzv_timeout_s = 600;
  std::string secret_file;

  std::string name;
  std::string log_dir;
  std::set<int> ranks_filter;  // empty: all ranks reach the terminal
  int grace_s = 10;
  int max_restarts = 0;
  int heartbeat_timeout_s = 15;
  bool dry_run = false;
  bool detach = false;               // -d: the coordinator leaves the terminal
  std::string tensorboard_dir = {};  // on rank 0's host, relative to its workdir
  int verbose = 0;
  bool quiet = false;
  bool no_skip = false;  // hold ranks back rather than skip lines on a slow terminal

  int ssh_parallel = 64;
  int ssh_timeout_s = 10;
  bool accept_new_host_keys = false;
  bool rdzv_via_ssh = false;  // agents reach the rendezvous through their SSH connection
};

struct ParseResult {
  std::optional<Options> options;
  int exit_code = 0;    // when options is empty: 0 for --help/--version, 2 for usage errors
  std::string message;  // help text or the error
};

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
ParseResult parse_options(int argc, const char* const* argv,
                          std::span<const CommandHelp> commands = {});

// "0,3,5-7" -> {0,3,5,6,7}; nullopt on malformed input.
std::optional<std::set<int>> parse_rank_list(const std::string& text);

// $DLAUNCH_STATE_DIR, else $XDG_STATE_HOME/dlaunch/jobs, else ~/.local/state/dlaunch/jobs.
std::string default_log_dir();

}  // namespace dlaunch
