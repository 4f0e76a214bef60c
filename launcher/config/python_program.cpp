#include "launcher/config/python_program.h"

namespace dlaunch {

PythonFor choose_python(const std::string& flag, const std::string& host_key,
                        const std::string& env) {
  if (!flag.empty()) return {flag, "--python"};
  if (!host_key.empty()) return {host_key, "hosts file"};
  if (!env.empty()) return {env, "DLAUNCH_PYTHON"};
  return {"python3", "PATH"};
}

const std::string& python_target(const std::vector<std::string>& command) {
  return command[command[2] == "-m" ? 3 : 2];
}

Result<std::vector<std::string>> python_command(std::vector<std::string> command,
                                                const PythonChoice& choice) {
  if (choice.module && choice.no_python)
    return fail("-m/--module and --no-python cannot be combined: a module needs Python");
  // torchrun: --run-path wins over --no-python.
  if (command.empty() || (choice.no_python && !choice.run_path)) return command;
  const bool script = command.front().ends_with(".py");
  if (!choice.module && !script && !choice.run_path) return command;
  // No host yet: each host's own `python` replaces it in its launch spec.
  std::vector<std::string> out{
      choose_python(choice.python, "", choice.python_env.value_or("")).path, "-u"};
  if (choice.module) out.push_back("-m");
  out.insert(out.end(), command.begin(), command.end());
  return out;
}

}  // namespace dlaunch
