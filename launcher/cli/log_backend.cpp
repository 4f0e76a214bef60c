#include "launcher/cli/log_backend.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "common/host_color.h"
#include "common/log.h"

namespace dlaunch {

void setup_logging(int verbosity) {
  // Diagnostics go to stderr: stdout carries only the ranks' own output.
  // spdlog colors the level on a terminal but knows nothing of NO_COLOR.
  const auto colors =
      color_allowed_for_fd(2) ? spdlog::color_mode::automatic : spdlog::color_mode::never;
  spdlog::set_default_logger(spdlog::stderr_color_mt("dlaunch", colors));
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
