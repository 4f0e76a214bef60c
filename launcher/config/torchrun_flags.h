// torchrun's command line (torch.distributed.run of PyTorch 2.x) on dlaunch:
// every flag of its parser, in both spellings, so that replacing the word
// `torchrun` in a job script is enough. The flags dlaunch already has under
// the same names (--nnodes, --nproc-per-node, --node-rank, --master-addr,
// --master-port, --max-restarts, --log-dir, -m, --no-python) are declared in
// options.cpp; this file adds the rest and says what each one becomes:
//
//   --standalone              one machine
//   --rdzv-endpoint HOST:PORT node 0's rendezvous (manual mode): the node that
//                             holds HOST is node 0, the others take node ranks
//                             as they join (unless --node-rank says)
//   --rdzv-backend            c10d or static: dlaunch's rendezvous; etcd: refused
//   --rdzv-id                 the job's name
//   --rdzv-conf K=V,...       timeout, last_call_timeout, is_host
//   --run-path                the program runs with Python
//   -r/--redirects SPEC       those streams stay off the terminal
//   -t/--tee SPEC             what dlaunch always does (a note)
//   --local-ranks-filter      only those local ranks reach the terminal
//   --local-addr              node 0's MASTER_ADDR, tried first
//   --role                    ROLE_NAME
// and the flags that only tune torchrun's own agent (--monitor-interval,
// --start-method, ...), accepted with a note that says why they change nothing.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"

namespace CLI {
class App;
}

namespace dlaunch {

struct Options;

struct TorchrunFlags {
  bool standalone = false;
  std::string rdzv_backend = {};
  std::string rdzv_endpoint = {};
  std::string rdzv_id = {};
  std::string rdzv_conf = {};
  bool run_path = false;
  std::string redirects = {};
  std::string tee = {};
  std::string local_ranks_filter = {};
  std::string local_addr = {};
  std::string role = {};
  // The flags given that change nothing here, each with why.
  std::vector<std::string> without_effect = {};
};

// Declares torchrun's flags that options.cpp does not on `app`.
void add_torchrun_options(CLI::App& app, TorchrunFlags& flags);

// torchrun's "-r"/"-t" value: 0 none, 1 stdout, 2 stderr, 3 both, for every
// local rank, or "LOCAL:N,LOCAL:N" per local rank. Bits: 1 stdout, 2 stderr.
struct StreamSpec {
  int all = 0;
  std::map<int, int> by_local_rank = {};
};
std::optional<StreamSpec> parse_stream_spec(const std::string& text);

// torchrun reads every flag it was not given from a PET_<FLAG> variable
// (PET_NPROC_PER_NODE=2), and Kubeflow's PyTorchJob passes its settings that
// way. The words those variables stand for, as "--flag=value" ("--flag" for a
// switch set to 1 or true), to be put before the command line's own so that
// a flag given there wins. `said` lists the variables read
// ("PET_NPROC_PER_NODE=abc, ..."), for an error to name them.
struct EnvArguments {
  std::vector<std::string> words;
  std::string said;
};
EnvArguments torchrun_env_arguments(const CLI::App& app);

// Puts the flags onto `o` (before manual mode is decided: the endpoint makes
// a multi-node job manual). A usage error, or nothing; what is said once goes
// to o.notes.
Result<void> apply_torchrun_flags(const TorchrunFlags& flags, Options& o);

}  // namespace dlaunch
