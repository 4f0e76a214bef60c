#include <doctest/doctest.h>
#include <fcntl.h>
#include <unistd.h>

#include <string>

#include "common/host_color.h"
#include "launcher/output/log_sink.h"

using namespace dlaunch;

namespace {

// What a LogSink with `settings` writes to its stdout for a few lines of two
// hosts, read back through a pipe.
std::string terminal_output(LogSink::Settings settings) {
  int fds[2];
  REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
  settings.terminal.out_fd = fds[1];
  settings.terminal.err_fd = fds[1];
  {
    LogSink sink(std::move(settings));
    sink.line(0, "h1", proto::Stream::out, "a");
    sink.line(1, "h2", proto::Stream::out, "b");
    sink.line(2, "h3", proto::Stream::err, "c");
  }
  ::close(fds[1]);
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) out.append(buf, std::size_t(n));
  ::close(fds[0]);
  return out;
}

}  // namespace

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
