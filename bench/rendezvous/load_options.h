// The command line of dlaunch-rdzv-load, flag for flag the one of
// tests/integration/rdzv_load.py, so that scale.py and the tests can run
// either load generator with the same arguments; --blind-node is this one's
// only (the MASTER_ADDR probe's failure paths at scale).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace dlaunch::load {

struct Options {
  int port = 0;
  std::string host = "127.0.0.1";
  std::string secret_file;
  int nnodes = -1;  // -1: not given (required unless --worker)
  int first_node = 1;
  int procs = 1;
  int nproc = 1;
  int fail_node = -1;
  int fail_code = 3;
  bool close_all_on_stop = false;
  double jitter = 0.0;
  double timeout = 120.0;
  long long seed = 0;
  // These nodes reach none of node 0's addresses: every Probe is answered at
  // once with each address timed out, and no connect is made.
  std::vector<int> blind_nodes;
  // Hidden, as in rdzv_load.py: one worker's share, "start:stop:step".
  bool worker = false;
  std::string nodes;
};

// rdzv_load.py's default for --procs: the CPU count, between 1 and 8.
int default_procs();

// nullopt after printing help (exit 0) or an error (exit 2); `exit_code` says which.
std::optional<Options> parse_options(int argc, char** argv, int* exit_code);

// "start:stop:step" as Python's range(); nullopt when malformed.
std::optional<std::vector<int>> parse_node_range(const std::string& text);

}  // namespace dlaunch::load
