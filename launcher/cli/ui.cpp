// `dlaunch ui`: the state dir's jobs as a web page and a Prometheus feed
// (launcher/web/ui_server.h), read-only, on loopback unless a token guards it.
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <cerrno>
#include <cstring>

#include <fstream>
#include <thread>

#include "common/console.h"
#include "common/exit_codes.h"
#include "launcher/cli/command_args.h"
#include "launcher/cli/commands.h"
#include "launcher/cli/subcommand.h"
#include "launcher/web/ui_server.h"

namespace dlaunch {
namespace {

// The token file's first line, without its line end.
Result<std::string> read_token(const std::string& path) {
  std::ifstream in(path);
  if (!in) return fail("--token-file " + path + ": cannot read it: " + std::strerror(errno));
  std::string token;
  std::getline(in, token);
  while (!token.empty() && (token.back() == '\r' || token.back() == ' ')) token.pop_back();
  if (token.size() < 16)
    return fail("--token-file " + path +
                ": its first line must hold a token of at least 16 "
                "characters (openssl rand -hex 16 > " +
                path + ")");
  return token;
}

std::string url_host(const std::string& host) {
  return host.find(':') != std::string::npos ? "[" + host + "]" : host;
}

}  // namespace

Result<UiArgs, int> parse_ui_args(int argc, const char* const* argv) {
  CLI::App app{"dlaunch ui: the jobs as a web page, with Prometheus' /metrics", "dlaunch ui"};
  UiArgs a;
  a.listen_text = "127.0.0.1:" + std::to_string(kDefaultUiPort);
  add_log_dir_option(app, a.log_dir);
  app.add_option("--listen", a.listen_text,
                 "ADDR:PORT to serve on; another address than loopback needs --token-file")
      ->capture_default_str();
  app.add_option("--token-file", a.token_file,
                 "a file whose first line is the token every request must carry "
                 "(a browser: open the URL with ?token=TOKEN once)");
  app.add_flag("-v,--verbose", a.verbose, "a line per request on stderr");
  if (auto parsed = parse_subcommand(app, argc, argv); !parsed) return fail(parsed.error());
  return a;
}

int serve_ui(const UiArgs& a) {
  auto listen = parse_listen_address(a.listen_text);
  if (!listen) {
    console().error(listen.error());
    return kExitUsage;
  }
  UiServerOptions options;
  options.listen = *listen;
  options.log_dir = a.log_dir;
  options.verbose = a.verbose;
  if (!a.token_file.empty()) {
    auto token = read_token(a.token_file);
    if (!token) {
      console().error(token.error());
      return kExitUsage;
    }
    options.token = *token;
  } else if (!is_loopback_host(listen->host)) {
    console().error("--listen " + a.listen_text +
                    ": an address other than loopback needs --token-file (the page shows every "
                    "job's command and logs); or reach a loopback one through ssh -L");
    return kExitUsage;
  }

  // A small, steady footprint (issue 54's bound is 20 MiB): two malloc
  // arenas rather than one per pool thread, and large blocks (a 1 MB job
  // list) mapped and given back when freed, instead of the dynamic threshold
  // that keeps them in the heap after the first one.
  ::mallopt(M_ARENA_MAX, 2);
  ::mallopt(M_MMAP_THRESHOLD, 256 * 1024);

  // SIGINT and SIGTERM end the server from a thread of their own; every
  // other thread (httplib's pool) inherits them blocked.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  ::signal(SIGPIPE, SIG_IGN);

  UiServer server(options);
  const auto port = server.bind();
  if (!port) {
    console().error(port.error());
    return kExitFailure;
  }
  const std::string url = "http://" + url_host(listen->host) + ":" + std::to_string(*port) + "/";
  console().out("dlaunch ui: the jobs of " + a.log_dir + " on " + url +
                ", /metrics for Prometheus" + (options.token.empty() ? "" : " (token needed)") +
                "; Ctrl-C stops it\n");
  console().flush();  // a script waits for this line to know the port
  std::thread watcher([&server, &stop_signals] {
    int signal = 0;
    sigwait(&stop_signals, &signal);
    server.stop();
  });
  server.run();
  // Ended other than by a signal: wake the watcher so that it can be joined.
  pthread_kill(watcher.native_handle(), SIGTERM);
  watcher.join();
  return kExitOk;
}

int ui_command(int argc, const char* const* argv) {
  auto args = parse_ui_args(argc, argv);
  return args ? serve_ui(*args) : args.error();
}

}  // namespace dlaunch
