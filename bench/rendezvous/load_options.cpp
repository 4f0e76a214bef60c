#include "bench/rendezvous/load_options.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>

namespace dlaunch::load {

int default_procs() {
  const long cpus = ::sysconf(_SC_NPROCESSORS_ONLN);
  return static_cast<int>(std::clamp<long>(cpus, 1, 8));
}

std::optional<Options> parse_options(int argc, char** argv, int* exit_code) {
  Options o;
  o.procs = default_procs();
  CLI::App app{
      "A load generator for dlaunch's rendezvous: nodes 1..N-1 of a manual-mode job against a "
      "real node 0, over the real protocol (the C++ twin of tests/integration/rdzv_load.py)",
      "dlaunch-rdzv-load"};
  app.add_option("--port", o.port, "node 0's --rdzv-port")->required();
  app.add_option("--host", o.host, "node 0's address")->capture_default_str();
  app.add_option("--secret-file", o.secret_file, "the file given to node 0")->required();
  app.add_option("--nnodes", o.nnodes, "the job's --nnodes (load acts as 1..N-1)");
  app.add_option("--first-node", o.first_node)->capture_default_str();
  app.add_option("--procs", o.procs, "load processes")->capture_default_str();
  app.add_option("--nproc", o.nproc, "ranks per load agent")->capture_default_str();
  app.add_option("--fail-node", o.fail_node,
                 "this node reports its first rank's exit with --fail-code")
      ->capture_default_str();
  app.add_option("--fail-code", o.fail_code)->capture_default_str();
  app.add_flag("--close-all-on-stop", o.close_all_on_stop,
               "at the first Stop, each load process closes all its connections; the one "
               "holding --fail-node sends the failure once all its agents are assigned");
  app.add_option("--jitter", o.jitter, "seconds of random delay before each agent's first connect")
      ->capture_default_str();
  app.add_option("--timeout", o.timeout, "give up after this long")->capture_default_str();
  app.add_option("--seed", o.seed)->capture_default_str();
  app.add_option("--blind-node", o.blind_nodes,
                 "this node answers every Probe at once with every address timed out, without "
                 "connecting, as a node whose SYNs are all lost (repeat, or a comma list)")
      ->delimiter(',');
  app.add_flag("--worker", o.worker)->group("");
  app.add_option("--nodes", o.nodes)->group("");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    *exit_code = app.exit(e);
    return std::nullopt;
  }
  if (!o.worker && o.nnodes < 0) {
    std::fprintf(stderr, "dlaunch-rdzv-load: --nnodes is required\n");
    *exit_code = 2;
    return std::nullopt;
  }
  if (o.worker && !parse_node_range(o.nodes)) {
    std::fprintf(stderr, "dlaunch-rdzv-load: --worker needs --nodes START:STOP:STEP\n");
    *exit_code = 2;
    return std::nullopt;
  }
  return o;
}

std::optional<std::vector<int>> parse_node_range(const std::string& text) {
  int start = 0;
  int stop = 0;
  int step = 0;
  char tail = 0;
  if (std::sscanf(text.c_str(), "%d:%d:%d%c", &start, &stop, &step, &tail) != 3 || step <= 0)
    return std::nullopt;
  std::vector<int> nodes;
  for (int n = start; n < stop; n += step) nodes.push_back(n);
  return nodes;
}

}  // namespace dlaunch::load
