// Another launcher's flags that change nothing under dlaunch: accepted so that
// its command line runs unchanged, and each said once, with why. torchrun's
// and deepspeed's tables (torchrun_flags.cpp, deepspeed_flags.cpp) share this.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace dlaunch {

struct FlagWithoutEffect {
  const char* names;  // CLI11's "--a,--b"
  const char* shown;  // how the note names it
  bool takes_value;
  const char* why;
};

// Declares `flags` in `app` under `group`. A given flag adds "<launcher>'s
// <shown> has no effect: <why>" to `notes` once, and calls `on_given`.
void add_flags_without_effect(CLI::App& app, const std::string& launcher,
                              std::span<const FlagWithoutEffect> flags, const std::string& group,
                              std::vector<std::string>& notes, std::function<void()> on_given = {});

}  // namespace dlaunch
