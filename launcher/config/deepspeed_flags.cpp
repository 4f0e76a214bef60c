#include "launcher/config/deepspeed_flags.h"

#include <CLI/CLI.hpp>
#include <algorithm>

#include "launcher/config/flags_without_effect.h"
#include "launcher/config/options.h"

namespace dlaunch {
namespace {

// deepspeed's flags that tune its own launcher, and why each changes nothing
// under dlaunch.
constexpr FlagWithoutEffect kDeepspeedWithoutEffect[] = {
    {"--launcher_args", "--launcher_args", true,
     "dlaunch starts its agents itself, with no pdsh or mpirun to pass them to"},
    {"--no_ssh_check", "--no_ssh_check", false,
     "a host dlaunch cannot reach over SSH is named in the job's error"},
    {"--force_multi", "--force_multi", false,
     "a host list of one remote host already runs over SSH"},
    {"--save_pid", "--save_pid", false,
     "the coordinator's pid is in the job record (dlaunch get JOB --json)"},
    {"--enable_each_rank_log", "--enable_each_rank_log", true,
     "every rank's output always goes to its own log (dlaunch logs JOB -r RANK)"},
    {"--bind_cores_to_rank", "--bind_cores_to_rank", false,
     "dlaunch does not bind ranks to cores; start the program under numactl or taskset for "
     "that"},
    {"--bind_core_list", "--bind_core_list", true,
     "dlaunch does not bind ranks to cores; start the program under numactl or taskset for "
     "that"},
};

}  // namespace

void add_deepspeed_options(CLI::App& app, DeepspeedFlags& f) {
  const std::string group = "deepspeed's flags";
  auto mark = [&f](CLI::Option* option) {
    option->group("deepspeed's flags")->each([&f](const std::string&) {
      f.deepspeed_only_flag = true;
    });
    return option;
  };
  mark(app.add_option("--num_nodes", f.num_nodes, "use the host list's first N hosts")
           ->check(CLI::Range(1, 1 << 20)));
  mark(app.add_option("--num_gpus,--num_accelerators", f.num_gpus,
                      "N ranks on each host, its GPUs 0..N-1 (fewer where its slots say so)")
           ->check(CLI::Range(1, 4096)));
  mark(app.add_option("--ssh_port", f.ssh_port, "the SSH port of every host that names none")
           ->check(CLI::Range(1, 65535)));
  mark(app.add_option("--min_elastic_nodes", f.min_elastic_nodes,
                      "with --elastic_training: MIN of --nnodes MIN:MAX")
           ->check(CLI::Range(1, 1 << 20)));
  mark(app.add_option("--max_elastic_nodes", f.max_elastic_nodes,
                      "with --elastic_training: MAX of --nnodes MIN:MAX")
           ->check(CLI::Range(1, 1 << 20)));
  app.add_flag("--elastic_training", f.elastic_training,
               "an elastic job over the host list (--nnodes MIN:MAX)")
      ->group(group);
  app.add_flag("--no_local_rank", f.no_local_rank,
               "no --local_rank=N argument for the ranks (deepspeed's default passes it)")
      ->group(group);
  app.add_flag("--pass-local-rank", f.pass_local_rank,
               "each rank gets --local_rank=N after its script, as deepspeed and "
               "torch.distributed.launch pass it (on for a line with deepspeed's own flags)")
      ->group(group);
  app.add_option("--autotuning", f.autotuning, "refused: deepspeed's tuner is not a launch")
      ->group(group);
  add_flags_without_effect(app, "deepspeed", kDeepspeedWithoutEffect, group, f.without_effect,
                           [&f] { f.deepspeed_only_flag = true; });
}

Result<void> apply_deepspeed_flags(const DeepspeedFlags& f, Options& o) {
  if (!f.autotuning.empty()) {
    return fail("deepspeed's --autotuning " + f.autotuning +
                " runs deepspeed's own tuner, which starts many trial jobs: run it with deepspeed; "
                "dlaunch launches the tuned configuration");
  }
  for (const auto& note : f.without_effect) o.notes.push_back(note);
  o.num_nodes = f.num_nodes;
  o.num_gpus = f.num_gpus;
  // As deepspeed: N processes where nothing else says how many (this
  // machine alone, hosts without slots), whatever GPUs there are; at most N
  // on a host with more slots (launcher/config/host_source.h).
  if (f.num_gpus > 0 && !o.nproc_per_node) o.nproc_per_node = f.num_gpus;
  o.ssh_port = f.ssh_port;
  if (f.elastic_training || f.min_elastic_nodes || f.max_elastic_nodes) {
    if (!f.elastic_training) {
      return fail(
          "--min_elastic_nodes and --max_elastic_nodes go with --elastic_training (as in "
          "deepspeed)");
    }
    if (o.min_nodes != 0)
      return fail("--elastic_training and --nnodes MIN:MAX both give the range");
    o.min_nodes = static_cast<std::size_t>(f.min_elastic_nodes ? f.min_elastic_nodes : 1);
    o.max_nodes = static_cast<std::size_t>(f.max_elastic_nodes ? f.max_elastic_nodes
                                                               : std::max(f.num_nodes, 0));
    if (o.max_nodes != 0 && o.min_nodes > o.max_nodes)
      return fail("--min_elastic_nodes is above --max_elastic_nodes");
  }
  // A hostfile or --include line whose program is configured for deepspeed
  // (deepspeed's own flags all optional) is deepspeed's line too.
  const bool host_selection = !o.hostfile.empty() || !o.include.empty();
  const bool deepspeed_program =
      std::any_of(o.command.begin(), o.command.end(), [](const std::string& word) {
        return word == "--deepspeed" || word == "--deepspeed_config" ||
               word.starts_with("--deepspeed_config=") || word.starts_with("--deepspeed=");
      });
  const bool deepspeed_line = f.deepspeed_only_flag || f.elastic_training || o.deepspeed_launcher ||
                              (host_selection && deepspeed_program);
  o.deepspeed_line = deepspeed_line;
  o.pass_local_rank = f.pass_local_rank || (deepspeed_line && !f.no_local_rank);
  if (o.pass_local_rank && !f.pass_local_rank) {
    o.notes.push_back(
        "deepspeed's command line: each rank gets --local_rank=N after its script, as deepspeed "
        "passes it (--no_local_rank: not)");
  }
  return {};
}

}  // namespace dlaunch
