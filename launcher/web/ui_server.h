// `dlaunch ui`'s web server: read-only pages and JSON over a state dir, and
// Prometheus' /metrics (cpp-httplib, a thread per request from a small pool,
// blocked in accept() while no one looks: no timer, no CPU).
//
//   GET /, /job/NAME, /top          the page (launcher/web/assets/app.js draws it)
//   GET /static/app.js, style.css   its script and style
//   GET /api/jobs                   {"state_dir", "now", "jobs": [get --json of each]}
//   GET /api/jobs/NAME              {"state_dir", "now", "job": get --json}
//   GET /api/jobs/NAME/log?rank=R&offset=N[&round=K]
//                                   the rank's log bytes from N (negative: that
//                                   many from the end), at most 1 MiB; the
//                                   next offset in X-Dlaunch-Next-Offset
//   GET /api/jobs/NAME/scalars      {"tags": {"loss": [[step, value], ...]}}
//   GET /api/jobs/NAME/stacks       the last gathering's summary.txt: grouped
//                                   stacks and the verdict (dlaunch stacks)
//   GET /api/top                    {"state_dir", "top": top job --json}
//   GET /metrics                    launcher/web/job_metrics.h
// Nothing answers another method: the page never offers to run anything.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "common/result.h"
#include "launcher/web/ui_access.h"

namespace dlaunch {

struct UiServerOptions {
  ListenAddress listen;
  std::string token;  // empty: loopback only, checked by the caller
  std::string log_dir;
  bool verbose = false;  // a line per request on stderr
  double top_interval_s = 0.5;
};

class UiServer {
 public:
  explicit UiServer(UiServerOptions options);
  ~UiServer();
  UiServer(const UiServer&) = delete;
  UiServer& operator=(const UiServer&) = delete;

  // Binds the address; the port bound (the one asked for, or a free one for 0).
  Result<int> bind();
  // Serves until stop(), from any thread or a signal watcher.
  void run();
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dlaunch
