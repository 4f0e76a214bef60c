// `dlaunch metrics`: the Prometheus text of `GET /metrics` once, on stdout or
// written atomically to a file for node_exporter's textfile collector (which
// must never read half a file): packaging/ has a systemd timer for it.

#include <ctime>

#include "common/console.h"
#include "common/exit_codes.h"
#include "common/private_file.h"
#include "launcher/cli/command_args.h"
#include "launcher/cli/commands.h"
#include "launcher/cli/subcommand.h"
#include "launcher/web/job_metrics.h"

namespace dlaunch {
Result<MetricsArgs, int> parse_metrics_args(int argc, const char* const* argv) {
  CLI::App app{
      "dlaunch metrics: the jobs as Prometheus metrics (what /metrics of dlaunch ui "
      "serves)",
      "dlaunch metrics"};
  MetricsArgs a;
  add_log_dir_option(app, a.log_dir);
  app.add_option("-o,--output", a.output,
                 "write to this file atomically (node_exporter's textfile collector: "
                 "DIR/dlaunch.prom) instead of stdout");
  if (auto parsed = parse_subcommand(app, argc, argv); !parsed) return fail(parsed.error());
  return a;
}

int write_metrics(const MetricsArgs& a) {
  const std::string text =
      format_job_metrics(load_jobs(a.log_dir), std::time(nullptr), last_rank_output);
  if (a.output.empty()) {
    console().out(text);
    return kExitOk;
  }
  // Beside it, then renamed over it: the collector never reads half a file.
  const auto slash = a.output.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : a.output.substr(0, slash);
  const std::string name = slash == std::string::npos ? a.output : a.output.substr(slash + 1);
  if (auto written = write_file_whole(dir.empty() ? "/" : dir, name, text, 0644); !written) {
    console().error(written.error());
    return kExitFailure;
  }
  return kExitOk;
}

int metrics_command(int argc, const char* const* argv) {
  auto args = parse_metrics_args(argc, argv);
  return args ? write_metrics(*args) : args.error();
}

}  // namespace dlaunch
