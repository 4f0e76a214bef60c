#include "launcher/cli/load_hosts.h"

#include "common/console.h"
#include "common/exit_codes.h"
#include "common/log.h"
#include "launcher/config/host_source.h"

namespace dlaunch {

Result<HostsFile, int> load_hosts_or_report(const Options& o) {
  auto loaded = load_host_source(o);
  if (!loaded) {
    for (const auto& d : loaded.error()) console().error(d.to_string());
    return fail(kExitUsage);
  }
  auto hosts = std::move(*loaded);
  for (const auto& w : hosts.warnings) log::warn(w.to_string());
  return hosts;
}

}  // namespace dlaunch
