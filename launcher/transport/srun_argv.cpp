#include "launcher/transport/srun_argv.h"

namespace dlaunch {

std::string srun_nodelist(const std::vector<std::string>& nodes) {
  std::string list;
  for (const auto& node : nodes) {
    if (!list.empty()) list += ',';
    list += node;
  }
  return list;
}

std::vector<std::string> srun_argv(const SrunStep& step) {
  const std::string n = std::to_string(step.nodes.size());
  std::vector<std::string> argv{step.srun,
                                "--nodes=" + n,
                                "--ntasks=" + n,
                                "--ntasks-per-node=1",
                                "--nodelist=" + srun_nodelist(step.nodes),
                                step.elastic ? "--kill-on-bad-exit=0" : "--kill-on-bad-exit=1",
                                "--wait=0",
                                "--input=all",
                                "--label",
                                "--unbuffered",
                                "--mpi=none"};
  if (step.elastic) argv.push_back("--no-kill");
  if (!step.job_name.empty()) argv.push_back("--job-name=" + step.job_name);
  argv.push_back(step.agent_binary);
  argv.push_back("--slurm");
  return argv;
}

}  // namespace dlaunch
