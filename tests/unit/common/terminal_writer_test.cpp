// The terminal writer over a real pipe: a reader that stops reading never
// blocks the caller, order is kept across streams, and the space callback
// fires once the reader catches up.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <string>
#include <thread>

#include "common/console.h"
#include "common/terminal_writer.h"

using namespace dlaunch;

namespace {

struct Pipe {
  int fds[2] = {-1, -1};
  Pipe() { REQUIRE(::pipe2(fds, O_CLOEXEC) == 0); }
  ~Pipe() {
    for (int fd : fds) {
      if (fd >= 0) ::close(fd);
    }
  }
  // Everything written until the write end is closed (by the caller).
  std::string read_to_eof() {
    std::string out;
    char buf[65536];
    ssize_t n;
    while ((n = ::read(fds[0], buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
    return out;
  }
  std::string read_all() {
    ::close(fds[1]);
    fds[1] = -1;
    return read_to_eof();
  }
};

}  // namespace

TEST_CASE("terminal writer: a reader that never reads does not block offer()") {
  Pipe pipe;
  TerminalWriter::Settings settings;
  settings.out_fd = pipe.fds[1];
  settings.err_fd = pipe.fds[1];
  settings.max_buffered = 1024 * 1024;
  std::string drained;
  {
    TerminalWriter writer(settings);
    const std::string line(1000, 'x');
    int accepted = 0;
    // A pipe holds 64 KiB; the rest waits in the writer's buffer, then offer()
    // refuses. The loop ending at all is the point: nothing blocked.
    while (writer.offer(TerminalWriter::Stream::out, line + "\n")) ++accepted;
    // The bound is on memory: about 1 MiB of 1,001-byte lines (with what
    // holding each costs), plus what the pipe took.
    CHECK(accepted >= 400);
    CHECK(accepted * 1001 <= 1024 * 1024 + 65536);
    CHECK(writer.over_bound());
    // write() still queues: dlaunch's own notes are never refused.
    writer.write(TerminalWriter::Stream::err, "note\n");
    std::thread reader([&] { drained = pipe.read_to_eof(); });
    writer.drain();
    ::close(pipe.fds[1]);
    pipe.fds[1] = -1;
    reader.join();
  }
  CHECK(drained.size() >= 400 * 1001 + 5);
  CHECK(drained.ends_with("note\n"));
}

TEST_CASE("terminal writer: short lines are packed, and the bound holds for what they cost") {
  Pipe pipe;
  TerminalWriter::Settings settings;
  settings.out_fd = pipe.fds[1];
  settings.err_fd = pipe.fds[1];
  settings.max_buffered = 1024 * 1024;
  TerminalWriter writer(settings);
  int accepted = 0;
  while (writer.offer(TerminalWriter::Stream::out, "[0] 12345\n")) ++accepted;
  // Memory held stays within the bound (the pipe took 64 KiB of it) ...
  CHECK(accepted * 10 <= 1024 * 1024 + 65536);
  // ... and lines share chunks instead of costing a queue slot and a heap
  // block each (which held fewer than 40,000 of them).
  CHECK(accepted > 40000);
  std::thread reader([&] { pipe.read_to_eof(); });
  writer.drain();
  CHECK(writer.buffered() == 0);
  ::close(pipe.fds[1]);
  pipe.fds[1] = -1;
  reader.join();
}

TEST_CASE("terminal writer: order is kept across stdout and stderr") {
  Pipe pipe;
  TerminalWriter::Settings settings;
  settings.out_fd = pipe.fds[1];
  settings.err_fd = pipe.fds[1];
  {
    TerminalWriter writer(settings);
    for (int i = 0; i < 1000; ++i) {
      writer.write(i % 3 ? TerminalWriter::Stream::out : TerminalWriter::Stream::err,
                   std::to_string(i) + "\n");
    }
    writer.drain();
  }
  std::string expected;
  for (int i = 0; i < 1000; ++i) expected += std::to_string(i) + "\n";
  CHECK(pipe.read_all() == expected);
}

TEST_CASE("terminal writer: on_space fires once the reader catches up") {
  Pipe pipe;
  TerminalWriter::Settings settings;
  settings.out_fd = pipe.fds[1];
  settings.max_buffered = 256 * 1024;
  std::atomic<int> spaces{0};
  TerminalWriter writer(settings);
  writer.on_space([&] { ++spaces; });
  std::size_t accepted = 0;
  while (writer.offer(TerminalWriter::Stream::out, std::string(4096, 'y'))) accepted += 4096;
  CHECK(spaces == 0);
  // Catching up is reading everything accepted.
  std::thread reader([&] {
    char buf[65536];
    std::size_t total = 0;
    while (total < accepted) {
      const ssize_t n = ::read(pipe.fds[0], buf, sizeof buf);
      if (n <= 0) break;
      total += static_cast<std::size_t>(n);
    }
  });
  reader.join();
  writer.drain();
  CHECK(spaces == 1);
}

TEST_CASE("terminal writer: a closed reader (EPIPE) drops output instead of failing") {
  Pipe pipe;
  ::close(pipe.fds[0]);
  pipe.fds[0] = -1;
  TerminalWriter::Settings settings;
  settings.out_fd = pipe.fds[1];
  TerminalWriter writer(settings);
  for (int i = 0; i < 100; ++i) writer.write(TerminalWriter::Stream::out, "gone\n");
  writer.drain();
  CHECK(writer.buffered() == 0);
}

TEST_CASE("console: -v detail is skipped while the terminal is stalled, then said, never queued") {
  Pipe pipe;
  TerminalWriter::Settings settings;
  settings.out_fd = pipe.fds[1];
  settings.err_fd = pipe.fds[1];
  settings.max_buffered = 4096;
  std::size_t refused = 0;
  std::size_t most_buffered = 0;
  std::string from_reader;
  {
    TerminalWriter writer(settings);
    Console console(stdout, stderr);
    console.attach(&writer);
    // Nobody reads: the pipe fills, then the writer's buffer.
    const std::string detail(100, 'd');
    for (int i = 0; i < 100'000 && refused < 1000; ++i) {
      if (!console.skippable_line(detail)) ++refused;
      most_buffered = std::max(most_buffered, writer.buffered());
    }
    CHECK(refused == 1000);
    // Within the bound and one line: the dropped lines were not queued, nor a note for each.
    CHECK(most_buffered < settings.max_buffered + 1024);
    // The reader catches up; the next line says what was skipped before it.
    std::thread reader([&] { from_reader = pipe.read_to_eof(); });
    console.line("after the stall");
    console.flush();
    console.attach(nullptr);
    ::close(pipe.fds[1]);
    pipe.fds[1] = -1;
    reader.join();
  }
  // Every dropped line is counted in a note (more than one if the writer got
  // ahead for a moment while the pipe was filling), and the last comes right
  // before the next line.
  const std::string note = " log lines skipped while the terminal was behind\n";
  std::size_t said = 0;
  for (auto at = from_reader.find(note); at != std::string::npos;
       at = from_reader.find(note, at + 1)) {
    const auto start = from_reader.rfind("dlaunch: ", at);
    REQUIRE(start != std::string::npos);
    said += std::stoul(from_reader.substr(start + 9, at - start - 9));
  }
  CHECK(said == refused);
  const auto last = from_reader.rfind(note);
  REQUIRE(last != std::string::npos);
  CHECK(from_reader.substr(last + note.size()) == "after the stall\n");
}
