#include "common/console.h"

namespace dlaunch {

void Console::emit_err(std::string text) {
  if (writer_ != nullptr) {
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
