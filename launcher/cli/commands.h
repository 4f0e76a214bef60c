// dlaunch's commands as one table, as ninja keeps its tools: a row per
// command with its name, what --help says about it, and the function that runs
// it. The first word of the command line picks the row; a launch needs no word
// (`dlaunch -n 2 prog` is `dlaunch run -n 2 prog`), so only a word that is
// neither an option, a path, a program on PATH nor a command is an error.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "launcher/config/options.h"

namespace dlaunch {

// argv[0] is the command's name ("dlaunch" for a launch without `run`).
using CommandFunction = int (*)(int argc, const char* const* argv);

struct Command {
  CommandHelp help;
  CommandFunction run;
};

std::span<const Command> commands();
const Command* find_command(std::string_view name);
// The rows' help, for parse_options to list under --help.
std::vector<CommandHelp> command_help();

// The rows' functions, one file each (run.cpp, list.cpp, ...).
int run_command(int argc, const char* const* argv);
int list_command(int argc, const char* const* argv);
int get_command(int argc, const char* const* argv);
int logs_command(int argc, const char* const* argv);
int stop_command(int argc, const char* const* argv);
int stacks_command(int argc, const char* const* argv);
int delete_command(int argc, const char* const* argv);
int top_command(int argc, const char* const* argv);
int check_command(int argc, const char* const* argv);
int ui_command(int argc, const char* const* argv);
int metrics_command(int argc, const char* const* argv);

// What a command line's first word asks for: a command, whose argv starts at
// argv[first_arg], or, when `command` is null, a usage error.
struct FirstWord {
  const Command* command = nullptr;
  int first_arg = 0;
  std::string error;
};

using ProgramLookup = std::function<bool(std::string_view name)>;

FirstWord resolve_first_word(int argc, const char* const* argv, const ProgramLookup& on_path);

// Whether execvp would find `name` (no '/') in $PATH as an executable file.
bool program_on_path(std::string_view name);

// `dlaunch`: picks the command and runs it; returns the exit code.
int run_command_line(int argc, const char* const* argv);

}  // namespace dlaunch
