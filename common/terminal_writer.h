// Writes to the terminal (stdout and stderr) from a thread of its own, through
// a bounded buffer, so that the thread that queues never blocks: a terminal
// that stops reading (Ctrl-S, a stalled SSH client, `| less` on page one, a
// slow pipe) holds up only this writer, never the coordinator's event loop
// with its heartbeats, signals and rank log files.
//
// Bytes come out in the order they were queued, across both streams, so that
// a rank's stderr line stays where it arrived among the stdout lines.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <initializer_list>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "common/spare_buffer.h"

namespace dlaunch {

class TerminalWriter {
 public:
  enum class Stream { out, err };
  struct Settings {
    int out_fd = 1;
    int err_fd = 2;
    // Memory queued before offer() refuses (the bytes and what holding them
    // costs): a few seconds of a fast terminal, and a bound on what a stalled
    // one costs.
    std::size_t max_buffered = 8 * 1024 * 1024;
  };

  explicit TerminalWriter(Settings settings);
  // Writes out what is queued (blocking on a stalled terminal, as any program
  // that ends with output pending) and joins the thread.
  ~TerminalWriter();
  TerminalWriter(const TerminalWriter&) = delete;
  TerminalWriter& operator=(const TerminalWriter&) = delete;

  // The pieces of one write, joined on the way into the queue: a rank's line
  // goes in as its prefix, its text and "\n" with no string built for it.
  using Parts = std::initializer_list<std::string_view>;

  // Queues `bytes` unless the buffer already holds max_buffered; false (and
  // nothing queued) then. The caller decides: skip the line, or hold back.
  bool offer(Stream stream, Parts bytes);
  bool offer(Stream stream, std::string_view bytes) { return offer(stream, Parts{bytes}); }
  // Queues `bytes` whatever the buffer holds: dlaunch's own notes, markers,
  // and output the user asked never to skip.
  void write(Stream stream, Parts bytes);
  void write(Stream stream, std::string_view bytes) { write(stream, Parts{bytes}); }

  // Memory held by what is queued (see Settings::max_buffered).
  std::size_t buffered() const;
  bool over_bound() const { return buffered() >= settings_.max_buffered; }
  std::size_t max_buffered() const { return settings_.max_buffered; }
  // Called on the writer's thread when the buffer drains to half its bound
  // after having been over it: the owner posts it to its own thread.
  void on_space(std::function<void()> callback);
  // Blocks until everything queued so far has been written (or dropped on a
  // closed stream).
  void drain();

 private:
  struct Chunk {
    Stream stream;
    std::string bytes;
    std::size_t cost;  // memory_cost(bytes) when queued
  };
  static std::size_t memory_cost(const std::string& bytes);
  // Appends to the last chunk when it is of the same stream and has room, so
  // that a flood of lines costs no allocation and no queue slot per line.
  // Called with mutex_ held; true when the writer must be woken.
  bool queue(Stream stream, Parts bytes);
  void run();
  void write_fd(Stream stream, const std::string& bytes);

  Settings settings_;
  std::size_t chunk_;  // the most bytes one queued chunk holds
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable drained_;
  std::deque<Chunk> queue_;
  SpareBuffer spare_;  // the room of a chunk written, for the next one
  std::size_t buffered_ = 0;
  bool writing_ = false;
  bool was_over_ = false;
  bool trim_after_backlog_ = false;  // once the queue empties after a backlog
  bool stopping_ = false;
  bool sleeping_ = false;    // the writer waits for work: the next offer must wake it
  bool out_closed_ = false;  // EPIPE or another hard error: output there is dropped
  bool err_closed_ = false;
  std::function<void()> on_space_;
  std::thread thread_;
};

}  // namespace dlaunch
