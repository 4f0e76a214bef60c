// `dlaunch metrics`: the Prometheus text of `GET /metrics` once, on stdout or
// written atomically to a file for node_exporter's textfile collector (which
// must never read half a file): packaging/ has a systemd timer for it.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cerrno>
#include <cstring>

#include <ctime>

#include "common/console.h"
#include "common/exit_codes.h"
#include "launcher/cli/commands.h"
#include "launcher/cli/subcommand.h"
#include "launcher/web/job_metrics.h"

namespace dlaunch {
namespace {

// To a temporary file beside `path`, flushed, then renamed over it.
Result<void> write_atomically(const std::string& path, const std::string& text) {
  const auto slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
  std::string temp = dir + "/.dlaunch-metrics.XXXXXX";
  const int fd = ::mkstemp(temp.data());
  if (fd < 0) return fail("cannot write in " + dir + ": " + std::strerror(errno));
  bool ok = ::fchmod(fd, 0644) == 0;
  for (std::size_t done = 0; ok && done < text.size();) {
    const auto n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) done += static_cast<std::size_t>(n);
  }
  ok = ok && ::fsync(fd) == 0;
  const int error = errno;
  ::close(fd);
  if (!ok || ::rename(temp.c_str(), path.c_str()) != 0) {
    const int why = ok ? errno : error;
    ::unlink(temp.c_str());
    return fail("cannot write " + path + ": " + std::strerror(why));
  }
  return {};
}

}  // namespace

int metrics_command(int argc, const char* const* argv) {
  CLI::App app{
      "dlaunch metrics: the jobs as Prometheus metrics (what /metrics of dlaunch ui "
      "serves)",
      "dlaunch metrics"};
  std::string log_dir;
  std::string output;
  add_log_dir_option(app, log_dir);
  app.add_option("-o,--output", output,
                 "write to this file atomically (node_exporter's textfile collector: "
                 "DIR/dlaunch.prom) instead of stdout");
  if (auto parsed = parse_subcommand(app, argc, argv); !parsed) return parsed.error();
  const std::string text =
      format_job_metrics(load_jobs(log_dir), std::time(nullptr), last_rank_output);
  if (output.empty()) {
    console().out(text);
    return kExitOk;
  }
  if (auto written = write_atomically(output, text); !written) {
    console().error(written.error());
    return kExitFailure;
  }
  return kExitOk;
}

}  // namespace dlaunch
