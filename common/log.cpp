#include "common/log.h"

#include <cstdio>
#include <mutex>

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

}  // namespace

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
  static constexpr const char* names[] = {"debug", "info", "warning", "error"};
  std::fprintf(stderr, "dlaunch-agent: %s: %s\n", names[static_cast<int>(level)], message.c_str());
}

}  // namespace dlaunch::log
