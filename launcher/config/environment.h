// The environment a job's ranks get on every host, from three sources above
// the host's own login environment (lowest first): variables forwarded from
// the coordinator's environment, the hosts file's `env`, and --env/--env-file.
// Pure apart from reading an --env-file.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/text.h"  // valid_env_name
#include "launcher/hosts/diagnostic.h"

namespace dlaunch {

using EnvVars = std::map<std::string, std::string>;

// Whether the coordinator's variable `name` follows the job to every host by
// default: NCCL_*, CUDA_* (not CUDA_VISIBLE_DEVICES: each host has its own
// GPUs), TORCH_*, OMP_*, HF_*, PYTHONPATH, VIRTUAL_ENV.
bool forwarded_by_default(std::string_view name);

// The coordinator's variables that go to every host: the defaults above
// (unless `defaults` is false) and the names in `extra` (--forward-env, where
// PATH and LD_LIBRARY_PATH must be asked for; "NAME_*" takes a prefix).
// dlaunch's own rank variables (RANK, MASTER_ADDR, ...) never go.
EnvVars forwarded_environment(const EnvVars& coordinator, bool defaults,
                              const std::vector<std::string>& extra);

// KEY=VALUE lines: blank lines and # comments skipped, an `export ` prefix
// and one pair of surrounding quotes ('...' or "...") taken off the value.
// Errors name `path`:line.
Result<EnvVars, std::vector<Diagnostic>> parse_env_file(const std::string& text,
                                                        const std::string& path);
Result<EnvVars, std::vector<Diagnostic>> load_env_file(const std::string& path);

// deepspeed's environment files, in the order it reads them (later ones
// win): `.deepspeed_env` (or the name $DS_ENV_FILE gives) in the home
// directory, then in the current directory (once when they are one).
std::vector<std::string> deepspeed_env_paths(const char* ds_env_file, const std::string& home,
                                             const std::string& current);

// --env K=V items (later ones win); errors name the item.
Result<EnvVars, std::vector<Diagnostic>> parse_env_assignments(
    const std::vector<std::string>& items);

// Where a rank's variable came from, for --dry-run.
enum class EnvSource { forwarded, hosts_file, command_line };
struct EnvEntry {
  std::string value;
  EnvSource source = EnvSource::forwarded;
};
std::string_view env_source_name(EnvSource source);

// One host's variables from the three sources, the higher source winning.
std::map<std::string, EnvEntry> layered_environment(const EnvVars& forwarded,
                                                    const EnvVars& hosts_file,
                                                    const EnvVars& command_line);

}  // namespace dlaunch
