#include "launcher/config/python_program.h"

namespace dlaunch {

std::variant<std::vector<std::string>, std::string> python_command(std::vector<std::string> command,
                                                                   const PythonChoice& choice) {
  if (choice.module && choice.no_python)
    return std::string("-m/--module and --no-python cannot be combined: a module needs Python");
  // torchrun: --run-path wins over --no-python.
  if (command.empty() || (choice.no_python && !choice.run_path)) return command;
  const bool script = command.front().ends_with(".py");
  if (!choice.module && !script && !choice.run_path) return command;
  std::string python = choice.python;
  if (python.empty() && choice.python_env && !choice.python_env->empty())
    python = *choice.python_env;
  if (python.empty()) python = "python3";
  std::vector<std::string> out{python, "-u"};
  if (choice.module) out.push_back("-m");
  out.insert(out.end(), command.begin(), command.end());
  return out;
}

}  // namespace dlaunch
