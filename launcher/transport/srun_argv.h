// The one srun command line the Slurm transport runs: a job step with one
// dlaunch-agent per node, inside the allocation the coordinator runs in. Pure,
// so the exact options are a unit test.
//
//   srun --nodes=N --ntasks=N --ntasks-per-node=1 --nodelist=a,b,...
//        --kill-on-bad-exit=1 --wait=0 --input=all --label --unbuffered
//        --mpi=none --job-name=<job> <agent> --slurm
//
// Why each option:
//   --nodes, --ntasks, --ntasks-per-node=1  one agent per planned node, no more:
//        the agent starts the node's ranks itself, so Slurm counts one task
//        per node however many ranks run there.
//   --nodelist  the planned nodes exactly (after --include/--exclude), not any
//        N nodes of the allocation.
//   --kill-on-bad-exit=1  an agent that dies (a crash, an OOM kill, a lost
//        link to the coordinator: any non-zero exit) ends the whole step, so
//        nothing of the job outlives it. An agent that the coordinator stopped
//        exits 0 (LaunchSpec::slurm_task), so a job's orderly stop never
//        cuts the other agents' grace periods short. srun also reports a
//        task's failure the moment it happens (srun_output.h).
//        An elastic job (spares, --nnodes MIN:MAX) gives --kill-on-bad-exit=0
//        and --no-kill instead: a node that is lost ends its own task only,
//        and the coordinator's next round runs on the step's other agents,
//        the spares among them (docs/elastic.md). Its agents still end with
//        the coordinator: their stdin closes.
//   --wait=0  no timer of Slurm's own ends the step once the first task
//        exits. Both are given explicitly, so that KillOnBadExit or WaitTime
//        in slurm.conf, or SLURM_KILL_BAD_EXIT and SLURM_WAIT in the
//        environment, do not change them.
//   --input=all  every agent reads srun's stdin: the launch specs, then the
//        end-of-file that tells them all to stop.
//   --label  "<task>: " before each line of the agents' stderr, so the
//        transport can tell the nodes apart (srun_output.h).
//   --unbuffered  agents' diagnostics arrive as they are written.
//   --mpi=none  the agents are not MPI programs; a cluster's MpiDefault (PMIx)
//        would only slow the step's start.
//   --job-name  the step's name in sacct and squeue --steps: the dlaunch job.
// The agent's arguments are argv entries, never a shell string; the secret is
// in the launch specs on stdin, never here.
#pragma once

#include <string>
#include <vector>

namespace dlaunch {

struct SrunStep {
  std::string srun = "srun";       // the srun binary, found on PATH
  std::vector<std::string> nodes;  // Slurm node names, one agent each
  std::string agent_binary;        // dlaunch-agent's path, the same on every node
  std::string job_name;            // the dlaunch job; empty: no --job-name
  bool elastic = false;            // a lost node's task ends alone
};

std::vector<std::string> srun_argv(const SrunStep& step);

// `nodes` joined with commas, as --nodelist takes them.
std::string srun_nodelist(const std::vector<std::string>& nodes);

}  // namespace dlaunch
