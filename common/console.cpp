#include "common/console.h"

namespace dlaunch {

void Console::note(std::string_view line) {
  std::fflush(out_);
  std::fprintf(err_, "dlaunch: %.*s\n", static_cast<int>(line.size()), line.data());
  std::fflush(err_);
}

void Console::error(std::string_view message) {
  std::fflush(out_);
  std::fprintf(err_, "dlaunch: error: %.*s\n", static_cast<int>(message.size()), message.data());
  std::fflush(err_);
}

void Console::line(std::string_view text) {
  std::fprintf(err_, "%.*s\n", static_cast<int>(text.size()), text.data());
}

void Console::out(std::string_view text) {
  std::fwrite(text.data(), 1, text.size(), out_);
}

void Console::flush() {
  std::fflush(out_);
  std::fflush(err_);
}

Console& console() {
  static Console instance(stdout, stderr);
  return instance;
}

}  // namespace dlaunch
