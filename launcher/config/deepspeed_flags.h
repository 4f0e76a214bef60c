// The deepspeed launcher's command line on dlaunch (deepspeed/launcher/
// runner.py): `deepspeed --hostfile=hostfile --num_gpus 8 train.py --deepspeed
// ds.json` runs with its first word changed. What dlaunch already has under
// deepspeed's names (--hostfile, --include, --exclude, --master_addr,
// --master_port, --module, --no_python, --launcher) is declared elsewhere;
// this file adds the rest:
//
//   --num_nodes N            the host list's first N hosts
//   --num_gpus N             N ranks on each host (GPUs 0..N-1; fewer where slots say)
//   --ssh_port P             the SSH port of every host that names none
//   --min_elastic_nodes, --max_elastic_nodes, --elastic_training
//                            an elastic job (--nnodes MIN:MAX)
//   --no_local_rank          no --local_rank=N argument
//   --autotuning             refused: deepspeed's tuner is not a launch
// and flags that only tune deepspeed's own launcher, accepted with a note.
//
// deepspeed appends --local_rank=N to each rank's arguments, and many older
// scripts parse it: a line that uses deepspeed's own flags gets it too
// (--no_local_rank: not), as does any line with dlaunch's --pass-local-rank.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/result.h"

namespace CLI {
class App;
}

namespace dlaunch {

struct Options;

struct DeepspeedFlags {
  int num_nodes = 0;
  int num_gpus = 0;
  int ssh_port = 0;
  int min_elastic_nodes = 0;
  int max_elastic_nodes = 0;
  bool elastic_training = false;
  bool no_local_rank = false;
  bool pass_local_rank = false;  // dlaunch's --pass-local-rank
  std::string autotuning = {};
  bool deepspeed_only_flag = false;  // one of deepspeed's own flags was given
  std::vector<std::string> without_effect = {};
};

void add_deepspeed_options(CLI::App& app, DeepspeedFlags& flags);

// Puts the flags onto `o`; a usage error, or nothing. What is said once goes
// to o.notes.
Result<void> apply_deepspeed_flags(const DeepspeedFlags& flags, Options& o);

}  // namespace dlaunch
