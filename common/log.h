// A minimal logging facade for the parts that run inside dlaunch-agent, which
// is uploaded to hosts with nothing of ours installed and so links no logging
// library. The coordinator routes it with set_sink to spdlog, which formats and
// filters and hands each line to the console (launcher/cli/log_backend.cpp).
#pragma once

#include <functional>
#include <sstream>
#include <string>

namespace dlaunch::log {

enum class Level { debug = 0, info = 1, warn = 2, error = 3 };

using Sink = std::function<void(Level, const std::string&)>;
void set_sink(Sink sink);
void set_level(Level level);
bool enabled(Level level);
void write(Level level, const std::string& message);

template <class... Args>
void emit(Level level, const Args&... args) {
  if (!enabled(level)) return;
  std::ostringstream out;
  (out << ... << args);
  write(level, out.str());
}

template <class... Args>
void debug(const Args&... args) {
  emit(Level::debug, args...);
}
template <class... Args>
void info(const Args&... args) {
  emit(Level::info, args...);
}
template <class... Args>
void warn(const Args&... args) {
  emit(Level::warn, args...);
}
template <class... Args>
void error(const Args&... args) {
  emit(Level::error, args...);
}

}  // namespace dlaunch::log
