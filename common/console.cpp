#include "common/console.h"

namespace dlaunch {

void Console::say_skipped() {
  if (skipped_.load(std::memory_order_relaxed) == 0) return;
  const auto skipped = skipped_.exchange(0);
  if (skipped == 0) return;
  writer_->write(
      TerminalWriter::Stream::err,
      "dlaunch: " + std::to_string(skipped) + " log lines skipped while the terminal was behind\n");
}

void Console::emit_err(std::string text) {
  if (writer_ != nullptr) {
    say_skipped();
    writer_->write(TerminalWriter::Stream::err, std::move(text));
    return;
  }
  std::fflush(out_);
  std::fwrite(text.data(), 1, text.size(), err_);
  std::fflush(err_);
}

void Console::note(std::string_view line) {
  emit_err("dlaunch: " + std::string(line) + "\n");
}

void Console::error(std::string_view message) {
  emit_err("dlaunch: error: " + std::string(message) + "\n");
}

void Console::line(std::string_view text) {
  emit_err(std::string(text) + "\n");
}

bool Console::skippable_line(std::string_view text) {
  if (writer_ == nullptr) {
    line(text);
    return true;
  }
  // Said only once a line can follow it: while the buffer is full, a note per
  // dropped line would be the growth this avoids.
  if (!writer_->over_bound()) {
    say_skipped();
    if (writer_->offer(TerminalWriter::Stream::err, std::string(text) + "\n")) return true;
  }
  skipped_.fetch_add(1, std::memory_order_relaxed);
  return false;
}

void Console::status(std::string_view text) {
  emit_err("\r" + std::string(text) + "\x1b[K");
}

void Console::out(std::string_view text) {
  if (writer_ != nullptr) {
    writer_->write(TerminalWriter::Stream::out, std::string(text));
    return;
  }
  std::fwrite(text.data(), 1, text.size(), out_);
}

void Console::flush() {
  if (writer_ != nullptr) writer_->drain();
  std::fflush(out_);
  std::fflush(err_);
}

Console& console() {
  static Console instance(stdout, stderr);
  return instance;
}

}  // namespace dlaunch
