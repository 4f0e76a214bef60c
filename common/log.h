// A minimal logging facade for the parts that run inside dlaunch-agent, which
// is uploaded to hosts with nothing of ours installed and so links no logging
// library. The coordinator routes it with set_sink to spdlog, which formats and
// filters and hands each line to the console (launcher/cli/log_backend.cpp).
// Without a sink, lines go to stderr as format_line() makes them.
#pragma once

#include <functional>
#include <sstream>
#include <string>
#include <string_view>

namespace dlaunch::log {

enum class Level { debug = 0, info = 1, warn = 2, error = 3 };

// The name that begins every line format_line() makes ("dlaunch-agent",
// "dlaunch"): each program gives its own once, at start-up, before any
// thread logs. Until then lines begin with the level.
void set_program_name(std::string name);

// "<program>: <level>: <message>", the level as "debug", "info", "warning" or
// "error": the line the default sink writes, and the shape a sink that words
// its lines itself keeps (a rendezvous relay's, rendezvous/relay_process.cpp).
std::string format_line(Level level, std::string_view message);

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
