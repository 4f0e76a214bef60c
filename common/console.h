// The one path for everything dlaunch itself prints: notes and errors on
// stderr ("dlaunch: ..."), the agents' own diagnostics, and the tables, help
// and plans that commands print on stdout. The ranks' output is not the
// console's: it goes through the job's log sink. Keeping one path means a
// detached coordinator can send all of it to one file, and a test can capture
// it.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "common/terminal_writer.h"

namespace dlaunch {

class Console {
 public:
  Console(std::FILE* out, std::FILE* err) : out_(out), err_(err) {}

  // "dlaunch: <line>" on stderr, after flushing stdout so that the two stay
  // in order on a terminal.
  void note(std::string_view line);
  // "dlaunch: error: <message>" on stderr.
  void error(std::string_view message);
  // A diagnostic line exactly as given (plus a newline) on stderr.
  void line(std::string_view text);
  // The same for a line that may be skipped: -v/-vv's detail, which a big job
  // makes by the thousand a second. While a stalled terminal holds the
  // writer's whole buffer it is dropped (false), so the detail cannot grow
  // memory without bound; the next line that gets through is preceded by
  // "dlaunch: N log lines skipped while the terminal was behind".
  bool skippable_line(std::string_view text);
  // A status line on stderr redrawn in place ("\r", the text, clear to the
  // end of the line); "" clears it. Only for a terminal.
  void status(std::string_view text);
  // Text exactly as given on stdout: tables, help, --dry-run plans.
  void out(std::string_view text);
  void flush();

  // Sends the stderr side elsewhere (a detached coordinator's log file).
  void redirect_err(std::FILE* err) { err_ = err; }
  // While a job runs, everything goes through its terminal writer, so that a
  // stalled terminal never blocks the caller and notes stay in order with the
  // ranks' lines. nullptr: back to direct writes.
  void attach(TerminalWriter* writer) { writer_ = writer; }

 private:
  void emit_err(std::string text);
  void say_skipped();

  std::FILE* out_;
  std::FILE* err_;
  TerminalWriter* writer_ = nullptr;
  std::atomic<std::uint64_t> skipped_{0};  // skippable lines dropped, not yet said
};

// The process's console (stdout and stderr).
Console& console();

}  // namespace dlaunch
