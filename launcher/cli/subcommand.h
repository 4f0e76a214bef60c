// What the job commands (list, get, logs, stop, top) share: their arguments
// parsed the same way, with the same help and errors, the --log-dir option,
// and one message for a job name that names nothing.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>

#include "common/result.h"
#include "launcher/record/job_store.h"

namespace dlaunch {

// Parses argv[1..] (argv[0] is the command's name). Fails with the exit code
// when the command is done already: 0 after printing --help, 2 (kExitUsage)
// after a usage error.
Result<void, int> parse_subcommand(CLI::App& app, int argc, const char* const* argv);

// --log-dir, defaulting to where coordinators write their records.
void add_log_dir_option(CLI::App& app, std::string& log_dir);

// The job; fails with the exit code (kExitFailure) once the user was told
// there is no such job.
Result<Job, int> find_job_or_report(const std::string& log_dir, const std::string& name);

// Whether this machine can signal the job's coordinator; if not (it runs on
// another machine sharing the state dir), says where to `what` it instead.
bool coordinator_reachable_or_report(const Job& job, const std::string& what);

}  // namespace dlaunch
