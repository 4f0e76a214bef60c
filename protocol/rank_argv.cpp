#include "protocol/rank_argv.h"

#include <string_view>

namespace dlaunch {
namespace {

bool is_python(const std::string& program) {
  const auto slash = program.rfind('/');
  const std::string_view name =
      std::string_view(program).substr(slash == std::string::npos ? 0 : slash + 1);
  return name.starts_with("python") || name.starts_with("pypy");
}

// CPython's options that take a value as the next word (`-W default`).
bool takes_value(std::string_view option) {
  return option == "-W" || option == "-X" || option == "-Q";
}

}  // namespace

std::size_t script_arguments_start(const std::vector<std::string>& argv) {
  if (argv.empty()) return 0;
  if (!is_python(argv[0])) return 1;
  for (std::size_t i = 1; i < argv.size(); ++i) {
    const std::string& word = argv[i];
    if (word == "-m" || word == "-c") return std::min(i + 2, argv.size());
    if (word.starts_with("-m") || word.starts_with("-c")) return i + 1;  // -mpkg, -cCODE
    if (word == "--" || word == "-") return std::min(i + 1, argv.size());
    if (takes_value(word)) {
      ++i;
      continue;
    }
    if (!word.starts_with('-')) return i + 1;  // the script
  }
  return argv.size();
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
