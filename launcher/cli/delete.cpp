// `dlaunch delete JOB...`: removes finished jobs' directories (logs, records,
// TensorBoard copies). A job that is still active is refused: stop it first.
#include <filesystem>

#include "common/console.h"
#include "launcher/cli/command_args.h"
#include "launcher/cli/commands.h"
#include "launcher/cli/subcommand.h"

namespace dlaunch {

Result<DeleteArgs, int> parse_delete_args(int argc, const char* const* argv) {
  CLI::App app{"dlaunch delete: remove finished jobs and their logs", "dlaunch delete"};
  DeleteArgs a;
  add_log_dir_option(app, a.log_dir);
  app.add_option("job", a.names, "job names (see dlaunch list)")->required();
  if (auto parsed = parse_subcommand(app, argc, argv); !parsed) return fail(parsed.error());
  return a;
}

int delete_jobs(const DeleteArgs& a) {
  int code = 0;
  for (const auto& name : a.names) {
    auto job = find_job_or_report(a.log_dir, name);
    if (!job) {
      code = job.error();
      continue;
    }
    if (is_active(job->status)) {
      console().error("job " + name + " is " + std::string(job_status_name(job->status)) +
                      " (coordinator pid " + std::to_string(job->info.coordinator_pid) +
                      "): stop it first with `dlaunch stop " + name + "`");
      code = 1;
      continue;
    }
    std::error_code ec;
    std::filesystem::remove_all(job->dir, ec);
    if (ec) {
      console().error("cannot remove " + job->dir + ": " + ec.message());
      code = 1;
      continue;
    }
    console().out("deleted job " + name + "\n");
  }
  return code;
}

int delete_command(int argc, const char* const* argv) {
  auto args = parse_delete_args(argc, argv);
  return args ? delete_jobs(*args) : args.error();
}

}  // namespace dlaunch
