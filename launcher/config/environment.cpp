#include "launcher/config/environment.h"

#include <algorithm>
#include <cctype>

#include "launcher/hosts/hosts_file.h"  // read_host_list_file
#include "protocol/rank_env.h"

namespace dlaunch {
namespace {

constexpr std::string_view kForwardedPrefixes[] = {"NCCL_", "CUDA_", "TORCH_", "OMP_", "HF_"};
constexpr std::string_view kForwardedNames[] = {"PYTHONPATH", "VIRTUAL_ENV"};

bool matches(std::string_view name, std::string_view pattern) {
  if (pattern.ends_with('*')) return name.starts_with(pattern.substr(0, pattern.size() - 1));
  return name == pattern;
}

}  // namespace

bool forwarded_by_default(std::string_view name) {
  if (name == "CUDA_VISIBLE_DEVICES") return false;
  for (auto prefix : kForwardedPrefixes) {
    if (name.starts_with(prefix)) return true;
  }
  for (auto n : kForwardedNames) {
    if (name == n) return true;
  }
  return false;
}

EnvVars forwarded_environment(const EnvVars& coordinator, bool defaults,
                              const std::vector<std::string>& extra) {
  EnvVars out;
  for (const auto& [name, value] : coordinator) {
    if (is_launcher_variable(name)) continue;
    bool take = defaults && forwarded_by_default(name);
    for (const auto& pattern : extra) take = take || matches(name, pattern);
    if (take) out[name] = value;
  }
  return out;
}

Result<EnvVars, std::vector<Diagnostic>> parse_env_file(const std::string& text,
                                                        const std::string& path) {
  EnvVars vars;
  std::vector<Diagnostic> errors;
  int number = 0;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = trim(std::string_view(text).substr(start, end - start));
    start = end + 1;
    ++number;
    if (line.empty() || line.front() == '#') continue;
    if (line.starts_with("export ")) line = trim(std::string_view(line).substr(7));
    const auto eq = line.find('=');
    const std::string name = trim(std::string_view(line).substr(0, eq));
    if (eq == std::string::npos || !valid_env_name(name)) {
      errors.push_back(
          {path, number, 0, "expected KEY=VALUE with KEY a variable name, got '" + line + "'"});
      continue;
    }
    if (is_launcher_variable(name)) {
      errors.push_back({path, number, 0, name + " is set by dlaunch for every rank"});
      continue;
    }
    std::string value = trim(std::string_view(line).substr(eq + 1));
    if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') &&
        value.back() == value.front()) {
      value = value.substr(1, value.size() - 2);
    }
    vars[name] = value;
  }
  if (!errors.empty()) return fail(std::move(errors));
  return vars;
}

Result<EnvVars, std::vector<Diagnostic>> load_env_file(const std::string& path) {
  auto text = read_host_list_file(path);
  if (!text) return fail(std::vector<Diagnostic>{text.error()});
  return parse_env_file(*text, path);
}

std::vector<std::string> deepspeed_env_paths(const char* ds_env_file, const std::string& home,
                                             const std::string& current) {
  const std::string name = ds_env_file && *ds_env_file ? ds_env_file : ".deepspeed_env";
  // A path in $DS_ENV_FILE is that one file.
  if (name.find('/') != std::string::npos) return {name};
  std::vector<std::string> paths = {home + "/" + name};
  if (current != home) paths.push_back(current + "/" + name);
  return paths;
}

Result<EnvVars, std::vector<Diagnostic>> parse_env_assignments(
    const std::vector<std::string>& items) {
  EnvVars vars;
  std::vector<Diagnostic> errors;
  for (const auto& item : items) {
    const auto eq = item.find('=');
    const std::string name = item.substr(0, eq);
    if (eq == std::string::npos || !valid_env_name(name)) {
      errors.push_back({"-e/--env", 0, 0, "expected KEY=VALUE, got '" + item + "'"});
    } else if (is_launcher_variable(name)) {
      errors.push_back({"--env", 0, 0, name + " is set by dlaunch for every rank"});
    } else {
      vars[name] = item.substr(eq + 1);
    }
  }
  if (!errors.empty()) return fail(std::move(errors));
  return vars;
}

std::string_view env_source_name(EnvSource source) {
  switch (source) {
    case EnvSource::forwarded:
      return "forwarded";
    case EnvSource::hosts_file:
      return "hosts file";
    case EnvSource::command_line:
      return "--env";
  }
  return "?";
}

std::map<std::string, EnvEntry> layered_environment(const EnvVars& forwarded,
                                                    const EnvVars& hosts_file,
                                                    const EnvVars& command_line) {
  std::map<std::string, EnvEntry> out;
  for (const auto& [k, v] : forwarded) out[k] = {v, EnvSource::forwarded};
  for (const auto& [k, v] : hosts_file) out[k] = {v, EnvSource::hosts_file};
  for (const auto& [k, v] : command_line) out[k] = {v, EnvSource::command_line};
  return out;
}

}  // namespace dlaunch
