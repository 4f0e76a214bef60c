#include "launcher/config/flags_without_effect.h"

#include <CLI/CLI.hpp>
#include <algorithm>

namespace dlaunch {

void add_flags_without_effect(CLI::App& app, const std::string& launcher,
                              std::span<const FlagWithoutEffect> flags, const std::string& group,
                              std::vector<std::string>& notes, std::function<void()> on_given) {
  for (const auto& flag : flags) {
    const std::string note = launcher + "'s " + flag.shown + " has no effect: " + flag.why;
    auto remember = [&notes, note, on_given] {
      if (on_given) on_given();
      if (std::ranges::find(notes, note) == notes.end()) notes.push_back(note);
    };
    if (flag.takes_value) {
      app.add_option_function<std::string>(
             flag.names, [remember](const std::string&) { remember(); }, flag.why)
          ->group(group)
          ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    } else {
      app.add_flag_callback(flag.names, remember, flag.why)->group(group);
    }
  }
}

}  // namespace dlaunch
