#include "launcher/cli/log_backend.h"

#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <mutex>
#include <string>

#include "common/console.h"
#include "common/host_color.h"
#include "common/log.h"

namespace dlaunch {
namespace {

// spdlog formats and filters; the line itself goes out through the console,
// the one path for what dlaunch prints (so it keeps its place among the
// ranks' lines, and a detached coordinator's log file gets it too).
class ConsoleSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  explicit ConsoleSink(bool colors) : colors_(colors) {}

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t formatted;
    formatter_->format(msg, formatted);
    std::string text(formatted.data(), formatted.size());
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
    const auto start = msg.color_range_start;
    const auto end = msg.color_range_end;
    if (colors_ && start < end && end <= text.size()) {
      text.insert(end, "\x1b[m");
      text.insert(start, level_color(msg.level));
    }
    // Notes, warnings and errors always get through; -v/-vv detail may be
    // skipped while the terminal is stalled (Console::skippable_line).
    if (msg.level <= spdlog::level::debug) {
      console().skippable_line(text);
    } else {
      console().line(text);
    }
  }
  void flush_() override {}

 private:
  // spdlog's own terminal colors for each level.
  static const char* level_color(spdlog::level::level_enum level) {
    switch (level) {
      case spdlog::level::debug:
        return "\x1b[36m";
      case spdlog::level::info:
        return "\x1b[32m";
      case spdlog::level::warn:
        return "\x1b[33m\x1b[1m";
      case spdlog::level::err:
      case spdlog::level::critical:
        return "\x1b[31m\x1b[1m";
      default:
        return "";
    }
  }

  bool colors_;
};

}  // namespace

void setup_logging(int verbosity) {
  // Diagnostics go to stderr: stdout carries only the ranks' own output.
  // spdlog colors nothing by itself here, so NO_COLOR is honoured.
  auto sink = std::make_shared<ConsoleSink>(color_allowed_for_fd(2));
  auto logger = std::make_shared<spdlog::logger>("dlaunch", std::move(sink));
  spdlog::set_default_logger(std::move(logger));
  spdlog::set_pattern("dlaunch: %^%l%$: %v");
  const auto level = verbosity >= 2   ? log::Level::debug
                     : verbosity == 1 ? log::Level::info
                                      : log::Level::warn;
  spdlog::set_level(verbosity >= 2   ? spdlog::level::debug
                    : verbosity == 1 ? spdlog::level::info
                                     : spdlog::level::warn);
  log::set_level(level);
  log::set_sink([](log::Level l, const std::string& message) {
    switch (l) {
      case log::Level::debug:
        spdlog::debug("{}", message);
        break;
      case log::Level::info:
        spdlog::info("{}", message);
        break;
      case log::Level::warn:
        spdlog::warn("{}", message);
        break;
      case log::Level::error:
        spdlog::error("{}", message);
        break;
    }
  });
}

}  // namespace dlaunch
