#include "protocol/rank_argv.h"

#include <string_view>

namespace dlaunch {
namespace {

std::string_view base_name(std::string_view program) {
  const auto slash = program.rfind('/');
  return slash == std::string_view::npos ? program : program.substr(slash + 1);
}

bool is_python(std::string_view name) {
  return name.starts_with("python") || name.starts_with("pypy");
}

bool is_shell(std::string_view name) {
  return name == "sh" || name == "bash" || name == "dash" || name == "zsh" || name == "ksh";
}

// After a Python interpreter at `program`: its options, then the script,
// `-m MODULE` or `-c CODE`.
std::size_t after_python(const std::vector<std::string>& argv, std::size_t program) {
  for (std::size_t i = program + 1; i < argv.size(); ++i) {
    const std::string& word = argv[i];
    if (word == "-m" || word == "-c") return std::min(i + 2, argv.size());
    if (word.starts_with("-m") || word.starts_with("-c")) return i + 1;  // -mpkg, -cCODE
    if (word == "--") return std::min(i + 2, argv.size());
    if (word == "-") return i + 1;  // the script from stdin
    // CPython's options that take the next word as their value.
    if (word == "-W" || word == "-X" || word == "-Q") {
      ++i;
      continue;
    }
    if (!word.starts_with('-')) return i + 1;  // the script
  }
  return argv.size();
}

// After a POSIX shell at `program`: its options, then the script or -c's
// command string (which makes the flag its $0, as deepspeed's would be).
std::size_t after_shell(const std::vector<std::string>& argv, std::size_t program) {
  for (std::size_t i = program + 1; i < argv.size(); ++i) {
    const std::string& word = argv[i];
    if (word == "--") return std::min(i + 2, argv.size());
    if (word == "-o" || word == "+o") {
      ++i;
      continue;
    }
    if (word.starts_with('-') || word.starts_with('+')) {
      // -c, or flags with it (-ec): the command string is the next word.
      if (word.find('c') != std::string::npos) return std::min(i + 2, argv.size());
      continue;
    }
    return i + 1;  // the script
  }
  return argv.size();
}

}  // namespace

std::size_t script_arguments_start(const std::vector<std::string>& argv) {
  std::size_t program = 0;
  // `env [-i] [NAME=VALUE]... PROGRAM`: the program that env runs.
  if (!argv.empty() && base_name(argv[0]) == "env") {
    program = 1;
    while (program < argv.size() &&
           (argv[program].starts_with('-') || argv[program].find('=') != std::string::npos))
      ++program;
    if (program == argv.size()) return argv.size();
  }
  if (program >= argv.size()) return argv.size();
  const std::string_view name = base_name(argv[program]);
  if (is_python(name)) return after_python(argv, program);
  if (is_shell(name)) return after_shell(argv, program);
  return program + 1;
}

std::vector<std::string> rank_argv(const std::vector<std::string>& argv, bool pass_local_rank,
                                   const std::string& local_rank) {
  if (!pass_local_rank) return argv;
  std::vector<std::string> out = argv;
  const auto at = static_cast<std::ptrdiff_t>(script_arguments_start(argv));
  out.insert(out.begin() + at, "--local_rank=" + local_rank);
  return out;
}

}  // namespace dlaunch
