// dlaunch-rdzv-load: tests/integration/rdzv_load.py in C++, for benchmarks
// where the load shares a few cores with the node 0 being measured (at 10,000
// nodes the Python load costs about 3 CPU-seconds, which then competes with
// node 0 for the machine). Same flags, same protocol flow, same JSON summary
// on stdout, same exit code (1 when any agent ended other than stopped or
// closed_on_stop). Not installed: a benchmark tool of the build tree.
//
//   dlaunch-rdzv-load --port P --secret-file F --nnodes N [--procs K] [--fail-node I]
//                     [--blind-node I,J,...]
//
// Nodes first_node..N-1 are dealt round-robin to --procs forked workers, as
// rdzv_load.py deals them to its worker processes; the parent merges the
// workers' summaries. `--worker --nodes START:STOP:STEP` runs one share in
// this process and prints that worker's summary, as rdzv_load.py --worker does.
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <string>
#include <vector>

#include "bench/rendezvous/load_options.h"
#include "bench/rendezvous/load_summary.h"
#include "bench/rendezvous/load_worker.h"
#include "common/posix.h"
#include "launcher/config/secret.h"

namespace {

using dlaunch::load::Options;
using dlaunch::load::Summary;

// The stand-in for a worker that gave no summary, as rdzv_load.py's Load.wait() makes it.
Summary failed_worker(std::size_t worker, std::int64_t agents, const std::string& how) {
  Summary s;
  s.agents = agents;
  s.outcomes.add("worker_failed", static_cast<double>(agents));
  s.errors.push_back("load worker " + std::to_string(worker) + " " + how);
  return s;
}

std::vector<int> share(const Options& o, int worker, int procs) {
  std::vector<int> nodes;
  for (int n = o.first_node + worker; n < o.nnodes; n += procs) nodes.push_back(n);
  return nodes;
}

int run_workers(const Options& o, const std::string& secret) {
  const int procs = std::max(1, std::min(o.procs, o.nnodes - o.first_node));
  std::vector<pid_t> pids;
  std::vector<int> pipes;
  const pid_t parent = ::getpid();
  for (int w = 0; w < procs; ++w) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) {
      std::perror("dlaunch-rdzv-load: pipe");
      return 2;
    }
    const pid_t pid = ::fork();
    if (pid == 0) {
      // A worker must not outlive a parent that was killed (scale.py's load.kill()).
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(1);
      ::close(fds[0]);
      for (int earlier : pipes) ::close(earlier);
      const Summary s = dlaunch::load::Worker(o, secret, share(o, w, procs)).run();
      ::_exit(dlaunch::write_all(fds[1], dlaunch::load::serialize(s)) ? 0 : 1);
    }
    ::close(fds[1]);
    if (pid < 0) {
      std::perror("dlaunch-rdzv-load: fork");
      ::close(fds[0]);
      pids.push_back(-1);
      pipes.push_back(-1);
      continue;
    }
    pids.push_back(pid);
    pipes.push_back(fds[0]);
  }
  // One pipe after the other: a worker blocked on a full pipe only waits for
  // its turn, its agents all done by then.
  std::vector<Summary> parts;
  for (int w = 0; w < procs; ++w) {
    const auto agents = static_cast<std::int64_t>(share(o, w, procs).size());
    if (pids[w] < 0) {
      parts.push_back(failed_worker(w, agents, "could not be started"));
      continue;
    }
    const std::string text = dlaunch::read_all(pipes[w]);
    ::close(pipes[w]);
    int status = 0;
    while (::waitpid(pids[w], &status, 0) < 0 && errno == EINTR) {
    }
    auto summary = dlaunch::load::deserialize(text);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && summary) {
      parts.push_back(std::move(*summary));
    } else if (WIFSIGNALED(status)) {
      parts.push_back(
          failed_worker(w, agents, "was killed by signal " + std::to_string(WTERMSIG(status))));
    } else {
      parts.push_back(
          failed_worker(w, agents, "exited with " + std::to_string(WEXITSTATUS(status))));
    }
  }
  const Summary merged = dlaunch::load::merge(parts);
  std::printf("%s\n", dlaunch::load::merged_json(merged).c_str());
  for (const auto& [outcome, count] : merged.outcomes.items()) {
    if (outcome != "stopped" && outcome != "closed_on_stop") return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int exit_code = 0;
  const auto options = dlaunch::load::parse_options(argc, argv, &exit_code);
  if (!options) return exit_code;
  dlaunch::raise_descriptor_limit();
  std::signal(SIGPIPE, SIG_IGN);
  const auto read = dlaunch::read_secret_file(options->secret_file);
  if (!read) {
    std::fprintf(stderr, "dlaunch-rdzv-load: %s\n", read.error().c_str());
    return 2;
  }
  const std::string* secret = &read->secret;
  if (options->worker) {
    const Summary s =
        dlaunch::load::Worker(*options, *secret, *dlaunch::load::parse_node_range(options->nodes))
            .run();
    std::printf("%s\n", dlaunch::load::worker_json(s).c_str());
    return 0;
  }
  return run_workers(*options, *secret);
}
