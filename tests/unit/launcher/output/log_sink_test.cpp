#include <doctest/doctest.h>
#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <string>

#include "common/host_color.h"
#include "launcher/output/log_sink.h"

using namespace dlaunch;

namespace {

void three_hosts_lines(LogSink& sink) {
  sink.line(0, "h1", proto::Stream::out, "a");
  sink.line(1, "h2", proto::Stream::out, "b");
  sink.line(2, "h3", proto::Stream::err, "c");
}

// What a LogSink with `settings` writes to its terminal for the lines that
// `write` gives it (by default a few lines of three hosts), read back through
// a pipe.
std::string terminal_output(LogSink::Settings settings,
                            const std::function<void(LogSink&)>& write = three_hosts_lines) {
  int fds[2];
  REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
  settings.terminal.out_fd = fds[1];
  settings.terminal.err_fd = fds[1];
  {
    LogSink sink(std::move(settings));
    write(sink);
  }
  ::close(fds[1]);
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) out.append(buf, std::size_t(n));
  ::close(fds[0]);
  return out;
}

}  // namespace

TEST_CASE("log_sink: the terminal skips lines only where output can stall for good") {
  const auto dir =
      std::filesystem::temp_directory_path() / ("dlaunch-skip-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const int file_a = ::open((dir / "out.log").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  int pipe_fds[2] = {-1, -1};
  REQUIRE(file_a >= 0);
  REQUIRE(::pipe(pipe_fds) == 0);
  CHECK_FALSE(terminal_may_skip(file_a));  // > out.log, whatever stderr is
  CHECK(terminal_may_skip(pipe_fds[1]));   // | tee, a reader that may stop
  for (int fd : {file_a, pipe_fds[0], pipe_fds[1]}) ::close(fd);
  std::filesystem::remove_all(dir);
}

TEST_CASE("log_sink: plain prefixes unless the stream may be colored") {
  LogSink::Settings s;
  s.host_in_prefix = true;
  s.hosts = {"h1", "h2"};
  CHECK(terminal_output(s) == "[h1:0] a\n[h2:1] b\n[h3:2] c\n");

  s.color_out = true;  // stdout a terminal, stderr not
  CHECK(terminal_output(s) ==
        colored("[h1:0]", 0) + " a\n" + colored("[h2:1]", 1) + " b\n" + "[h3:2] c\n");
  s.color_err = true;  // a host not in the list gets the next color
  CHECK(terminal_output(s).ends_with(colored("[h3:2]", 2) + " c\n"));

  s.host_in_prefix = false;  // `[R]` alone: one machine, nothing to tell apart
  CHECK(terminal_output(s) == "[0] a\n[1] b\n[2] c\n");
}

TEST_CASE("terminal filter: ranks, local ranks and torchrun's redirected streams") {
  TerminalFilter f;
  CHECK(f.shows(5, 1, proto::Stream::err));
  f.ranks = {0, 5};
  CHECK_FALSE(f.shows(4, 0, proto::Stream::out));
  f.ranks.clear();
  f.local_ranks = {0};
  CHECK(f.shows(4, 0, proto::Stream::out));
  CHECK_FALSE(f.shows(5, 1, proto::Stream::out));
  f.local_ranks.clear();
  f.hidden_streams = 1;  // -r 1: stdout off the terminal
  CHECK_FALSE(f.shows(0, 0, proto::Stream::out));
  CHECK(f.shows(0, 0, proto::Stream::err));
  f.hidden_streams = 0;
  f.hidden_streams_by_local_rank = {{1, 2}};  // -r 1:2
  CHECK(f.shows(3, 1, proto::Stream::out));
  CHECK_FALSE(f.shows(3, 1, proto::Stream::err));
  CHECK(f.shows(2, 0, proto::Stream::err));
}

TEST_CASE("log_sink: lines the filter hides still reach the rank log") {
  char dir[] = "/tmp/dlaunch-sink-XXXXXX";
  REQUIRE(::mkdtemp(dir) != nullptr);
  LogSink::Settings s;
  s.job_dir = dir;
  s.filter.hidden_streams = 2;
  const std::string shown = terminal_output(std::move(s), [](LogSink& sink) {
    sink.line(0, "h", proto::Stream::out, "kept");
    sink.line(0, "h", proto::Stream::err, "redirected");
  });
  CHECK(shown == "[0] kept\n");
  std::string log;
  {
    const int fd = ::open((std::string(dir) + "/rank-0.log").c_str(), O_RDONLY);
    REQUIRE(fd >= 0);
    char buf[4096];
    for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) log.append(buf, std::size_t(n));
    ::close(fd);
  }
  CHECK(log == "kept\nredirected\n");
  std::filesystem::remove_all(dir);
}

TEST_CASE("log_sink: the failure summary's tail holds a rank's last lines, oldest first") {
  LogSink::Settings s;
  s.quiet = true;
  s.tail_lines = 5;
  LogSink sink(s);
  CHECK(sink.tail(0).empty());
  sink.line(0, "h1", proto::Stream::out, std::string(70'000, 'x'));  // a long one, then short
  for (int i = 0; i < 12; ++i)
    sink.line(i % 2 ? 1 : 0, "h1", proto::Stream::err, "line " + std::to_string(i));
  CHECK(sink.tail(0) ==
        std::vector<std::string>{"line 2", "line 4", "line 6", "line 8", "line 10"});
  CHECK(sink.tail(1) ==
        std::vector<std::string>{"line 3", "line 5", "line 7", "line 9", "line 11"});
  // A new restart round starts with an empty tail.
  sink.mark_round(1);
  CHECK(sink.tail(0).empty());
  sink.line(0, "h1", proto::Stream::out, "after");
  CHECK(sink.tail(0) == std::vector<std::string>{"after"});
}

TEST_CASE("log_sink: a rank's prefix follows its host when the host changes") {
  LogSink::Settings s;
  s.host_in_prefix = true;
  CHECK(terminal_output(s, [](LogSink& sink) {
          sink.line(0, "h1", proto::Stream::out, "a");
          sink.line(0, "h1", proto::Stream::err, "b");
          sink.line(0, "h2", proto::Stream::out, "c");  // rank 0 restarted on another host
        }) == "[h1:0] a\n[h1:0] b\n[h2:0] c\n");
}
