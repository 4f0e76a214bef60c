#include "common/log.h"

#include <cstdio>
#include <mutex>
#include <utility>

namespace dlaunch::log {
namespace {

std::mutex& sink_mutex() {
  static std::mutex m;
  return m;
}
Sink& current_sink() {
  static Sink sink;
  return sink;
}
Level& current_level() {
  static Level level = Level::warn;
  return level;
}
std::string& program_name() {
  static std::string name;
  return name;
}

}  // namespace

void set_program_name(std::string name) {
  program_name() = std::move(name);
}

std::string format_line(Level level, std::string_view message) {
  static constexpr const char* names[] = {"debug", "info", "warning", "error"};
  std::string line = program_name().empty() ? "" : program_name() + ": ";
  line += names[static_cast<int>(level)];
  line += ": ";
  line += message;
  return line;
}

void set_sink(Sink sink) {
  std::lock_guard lock(sink_mutex());
  current_sink() = std::move(sink);
}

void set_level(Level level) {
  current_level() = level;
}
bool enabled(Level level) {
  return level >= current_level();
}

void write(Level level, const std::string& message) {
  std::lock_guard lock(sink_mutex());
  if (current_sink()) {
    current_sink()(level, message);
    return;
  }
  const std::string line = format_line(level, message) + "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace dlaunch::log
