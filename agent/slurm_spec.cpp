#include "agent/slurm_spec.h"

#include <cstdlib>

#include <algorithm>
#include <vector>

namespace dlaunch {

Result<LaunchSpec> read_slurm_launch_spec(int fd, std::string_view node_name) {
  std::vector<std::string> seen;
  int limit = 1;
  for (int read = 0; read < limit; ++read) {
    auto spec = read_launch_spec(fd);
    if (!spec) {
      if (read > 0) return fail("after " + std::to_string(read) + " launch specs: " + spec.error());
      return spec;
    }
    if (read == 0) limit = std::max(1, spec->nnodes);
    if (spec->host_name == node_name) return spec;
    if (seen.size() < 5) seen.push_back(spec->host_name);
  }
  std::string names;
  for (const auto& name : seen) names += (names.empty() ? "" : ", ") + name;
  if (static_cast<int>(seen.size()) < limit) names += ", ...";
  return fail("no launch spec for Slurm node '" + std::string(node_name) + "' among the " +
              std::to_string(limit) + " given (" + names +
              "): srun started this agent on a node the coordinator did not plan");
}

void forget_slurm_task_variables() {
  for (auto name : kSlurmTaskVariables) ::unsetenv(std::string(name).c_str());
}

}  // namespace dlaunch
