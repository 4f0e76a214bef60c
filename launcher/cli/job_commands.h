// Arena-style job commands on bare metal, reading the job records that every
// coordinator writes under the state dir:
//   dlaunch list                      jobs, newest last, with status and exit code
//   dlaunch get JOB                   one job: nodes, ranks, times, root cause
//   dlaunch logs JOB [-r R] [-t N] [-f]   rank logs, prefixed; follow while running
//   dlaunch stop JOB                  SIGTERM to its coordinator: a graceful stop
//   dlaunch top                       CPU and memory of this machine's ranks
#pragma once

#include <string_view>

namespace dlaunch {

bool is_job_command(std::string_view word);
// argv[0] is the subcommand's name.
int run_job_command(int argc, const char* const* argv);

}  // namespace dlaunch
