#include "common/terminal_writer.h"

#include <poll.h>
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>

#include "common/heap_return.h"

namespace dlaunch {

namespace {
constexpr auto kLinger = std::chrono::milliseconds(1);
constexpr std::size_t kLingerBelow = 64 * 1024;
// A queued chunk holds up to this many bytes (the most one write() takes), or
// a sixteenth of the bound, whichever is less, so that its room, counted in
// full, never eats the bound. Its room is set aside when it starts, and the
// writer hands the room of what it wrote back for the next chunk: a flood
// pays no allocation, reallocation or fresh page per line or per chunk.
constexpr std::size_t kChunk = 256 * 1024;
}  // namespace

TerminalWriter::TerminalWriter(Settings settings)
    : settings_(settings),
      chunk_(std::clamp<std::size_t>(settings.max_buffered / 16, 4096, kChunk)),
      spare_(chunk_, 2 * chunk_),
      thread_([this] { run(); }) {}

TerminalWriter::~TerminalWriter() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

// What a queued chunk holds in memory: the bytes, the heap block around them
// (glibc's header and rounding), and its place in the queue. Counting bytes
// alone let a stall of short lines hold twice the stated bound.
std::size_t TerminalWriter::memory_cost(const std::string& bytes) {
  constexpr std::size_t kInline = 15;      // libstdc++ keeps this many bytes in the string
  constexpr std::size_t kHeapHeader = 16;  // and a heap block costs its header and rounding
  const std::size_t heap = bytes.capacity() > kInline ? bytes.capacity() + 1 + kHeapHeader : 0;
  return sizeof(Chunk) + heap;
}

bool TerminalWriter::queue(Stream stream, Parts bytes) {
  std::size_t size = 0;
  for (const auto part : bytes) size += part.size();
  if (queue_.empty() || queue_.back().stream != stream ||
      queue_.back().bytes.size() + size > chunk_) {
    queue_.push_back({stream, spare_.take(size), 0});
  }
  Chunk& last = queue_.back();
  for (const auto part : bytes) last.bytes.append(part);
  buffered_ -= last.cost;
  last.cost = memory_cost(last.bytes);
  buffered_ += last.cost;
  return sleeping_;  // awake, it takes these bytes with the others
}

bool TerminalWriter::offer(Stream stream, Parts bytes) {
  {
    std::lock_guard lock(mutex_);
    if (buffered_ >= settings_.max_buffered) {
      was_over_ = true;
      return false;
    }
    if (!queue(stream, bytes)) return true;
  }
  wake_.notify_one();
  return true;
}

void TerminalWriter::write(Stream stream, Parts bytes) {
  {
    std::lock_guard lock(mutex_);
    const bool wake = queue(stream, bytes);
    if (buffered_ >= settings_.max_buffered) was_over_ = true;
    if (!wake) return;
  }
  wake_.notify_one();
}

std::size_t TerminalWriter::buffered() const {
  std::lock_guard lock(mutex_);
  return buffered_;
}

void TerminalWriter::on_space(std::function<void()> callback) {
  std::lock_guard lock(mutex_);
  on_space_ = std::move(callback);
}

void TerminalWriter::drain() {
  std::unique_lock lock(mutex_);
  drained_.wait(lock, [this] { return queue_.empty() && !writing_; });
}

void TerminalWriter::run() {
  // A reader that went away must give EPIPE here, not kill the process.
  sigset_t pipe_signal;
  sigemptyset(&pipe_signal);
  sigaddset(&pipe_signal, SIGPIPE);
  ::pthread_sigmask(SIG_BLOCK, &pipe_signal, nullptr);
  std::unique_lock lock(mutex_);
  for (;;) {
    sleeping_ = true;
    wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    sleeping_ = false;
    if (queue_.empty()) {
      if (stopping_) return;
      continue;
    }
    // The event loop hands over lines one at a time, each faster than a
    // thread wakes up: waking for each cost a context switch per line, a third
    // of the coordinator's CPU in a flood. So a short queue gets a millisecond
    // to grow (offers meanwhile wake no one), and a flood costs one wake-up
    // and one write per batch.
    if (!stopping_ && queue_.size() == 1 && queue_.front().bytes.size() < kLingerBelow)
      wake_.wait_for(lock, kLinger, [this] { return stopping_; });
    // Take everything queued for one stream in a row: one write per batch.
    const Stream stream = queue_.front().stream;
    std::size_t cost = queue_.front().cost;
    std::string batch = std::move(queue_.front().bytes);
    queue_.pop_front();
    while (!queue_.empty() && queue_.front().stream == stream && batch.size() < chunk_) {
      batch += queue_.front().bytes;
      cost += queue_.front().cost;
      queue_.pop_front();
    }
    writing_ = true;
    lock.unlock();
    write_fd(stream, batch);
    lock.lock();
    writing_ = false;
    buffered_ -= cost;
    spare_.give_back(std::move(batch));
    std::function<void()> space;
    if (was_over_ && buffered_ <= settings_.max_buffered / 2) {
      was_over_ = false;
      space = on_space_;
      trim_after_backlog_ = true;
    }
    if (space) {
      writing_ = true;  // drain() returns only after the callback
      lock.unlock();
      space();
      lock.lock();
      writing_ = false;
    }
    if (trim_after_backlog_ && queue_.empty()) {
      // A backlog of up to the bound was freed in small blocks that malloc
      // keeps for reuse; give them back, or a stall's memory stays for good.
      trim_after_backlog_ = false;
      batch = std::string();
      spare_.release();
      writing_ = true;  // drain() waits for the trim too
      lock.unlock();
      return_free_heap();
      lock.lock();
      writing_ = false;
    }
    // After the callback: drain() returning means everything it says is done.
    if (queue_.empty() && !writing_) drained_.notify_all();
  }
}

void TerminalWriter::write_fd(Stream stream, const std::string& bytes) {
  bool& closed = stream == Stream::out ? out_closed_ : err_closed_;
  if (closed) return;
  const int fd = stream == Stream::out ? settings_.out_fd : settings_.err_fd;
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n > 0) {
      done += static_cast<std::size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && errno == EAGAIN) {
      // Someone else set the descriptor non-blocking: wait for room.
      pollfd p{fd, POLLOUT, 0};
      ::poll(&p, 1, 1000);
    } else {
      // EPIPE (`| head` went away) or another hard error: nothing more can
      // reach this stream; the rank logs still hold everything.
      closed = true;
      return;
    }
  }
}

}  // namespace dlaunch
