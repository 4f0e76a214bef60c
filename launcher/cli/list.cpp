// `dlaunch list`: the jobs in the state dir, newest first, one row each. By
// default the active ones and those that ended within a day; --all shows
// every job, --status keeps the given statuses.
#include <algorithm>
#include <ctime>
#include <set>

#include "common/console.h"
#include "common/exit_codes.h"
#include "launcher/cli/command_args.h"
#include "launcher/cli/commands.h"
#include "launcher/cli/job_text.h"
#include "launcher/cli/job_view.h"
#include "launcher/cli/subcommand.h"

namespace dlaunch {
namespace {

constexpr long long kRecentS = 24 * 3600;

bool recent(const Job& j, long long now) {
  if (is_active(j.status)) return true;
  const long long end = j.result ? j.result->finished : j.info.started;
  return now - end < kRecentS;
}

}  // namespace

Result<ListArgs, int> parse_list_args(int argc, const char* const* argv) {
  CLI::App app{"dlaunch list: the jobs in the state dir, newest first", "dlaunch list"};
  ListArgs a;
  add_log_dir_option(app, a.log_dir);
  app.add_flag("-a,--all", a.all, "every job, not only active ones and those of the last 24 hours");
  app.add_option("--status", a.statuses_text,
                 "only jobs with these statuses: PENDING, RUNNING, RESTARTING, SUCCEEDED, FAILED, "
                 "STOPPED, LOST (comma-separated or repeated)")
      ->delimiter(',');
  app.add_flag("--json", a.json_out, "a JSON array of jobs (the fields of `dlaunch get --json`)");
  if (auto parsed = parse_subcommand(app, argc, argv); !parsed) return fail(parsed.error());
  return a;
}

int list_jobs(const ListArgs& a) {
  std::set<JobStatus> statuses;
  for (const auto& text : a.statuses_text) {
    auto status = parse_job_status(text);
    if (!status) {
      console().error("--status: unknown status '" + text +
                      "' (PENDING, RUNNING, RESTARTING, SUCCEEDED, FAILED, STOPPED, LOST)");
      return kExitUsage;
    }
    statuses.insert(*status);
  }
  const long long now = std::time(nullptr);
  const auto every = load_jobs(a.log_dir);
  std::vector<Job> jobs;
  for (const auto& j : every) {
    if (!statuses.empty() ? statuses.contains(j.status) : a.all || recent(j, now))
      jobs.push_back(j);
  }
  if (a.json_out) {
    JsonWriter json;
    json.begin_array();
    for (const auto& j : jobs) write_job_json(json, j, now);
    json.end_array();
    console().out(json.text() + "\n");
    return 0;
  }
  if (jobs.empty()) {
    std::string text = "no jobs in " + a.log_dir;
    if (every.size() > jobs.size())
      text += formatted(" to show (%zu more: dlaunch list --all)", every.size() - jobs.size());
    console().out(text + "\n");
    return 0;
  }
  std::size_t width = 4;
  for (const auto& j : jobs) width = std::max(width, j.info.name.size());
  const int w = static_cast<int>(width);
  console().out(formatted("%-*s  %-10s  %5s  %5s  %8s  %5s  %8s\n", w, "NAME", "STATUS", "HOSTS",
                          "RANKS", "RESTARTS", "AGE", "DURATION"));
  for (const auto& j : jobs) {
    const int ranks = job_ranks(j);
    console().out(formatted("%-*s  %-10s  %5d  %5s  %8d  %5s  %8s\n", w, j.info.name.c_str(),
                            std::string(job_status_name(j.status)).c_str(), j.info.nnodes,
                            ranks > 0 ? std::to_string(ranks).c_str() : "-", job_restarts(j),
                            format_age(now - j.info.started).c_str(),
                            format_duration(job_duration(j, now)).c_str()));
  }
  if (!a.all && statuses.empty() && every.size() > jobs.size())
    console().out(formatted("(%zu older jobs: dlaunch list --all)\n", every.size() - jobs.size()));
  return 0;
}

int list_command(int argc, const char* const* argv) {
  auto args = parse_list_args(argc, argv);
  return args ? list_jobs(*args) : args.error();
}

}  // namespace dlaunch
