#include "launcher/config/host_source.h"

#include <algorithm>
#include <cstdlib>

#include "launcher/config/host_list.h"

namespace dlaunch {

HostsFileResult load_host_source(const Options& o, const Environment& env) {
  HostsFileResult loaded;
  switch (o.host_source) {
    case HostSource::hosts_file:
      loaded = load_hosts_file(o.hosts_file);
      break;
    case HostSource::hostfile:
      loaded = load_hostfile(o.hostfile);
      break;
    case HostSource::host_list:
      loaded = parse_host_arg(o.host_list);
      break;
    case HostSource::slurm:
      loaded = slurm_hosts(env);
      if (auto* hosts = std::get_if<HostsFile>(&loaded); hosts && o.nproc_per_node) {
        for (auto& host : hosts->hosts) host.slots.reset();
      }
      break;
    case HostSource::none:
      return std::vector<Diagnostic>{{"dlaunch", 0, 0, "no host list was given"}};
  }
  auto* hosts = std::get_if<HostsFile>(&loaded);
  if (hosts == nullptr) return loaded;
  std::vector<Diagnostic> warnings = std::move(hosts->warnings);
  auto filtered = filter_hosts(std::move(*hosts), o.include, o.exclude);
  auto* kept = std::get_if<HostsFile>(&filtered);
  if (kept == nullptr) return filtered;
  kept->warnings = std::move(warnings);
  return apply_deepspeed_counts(std::move(*kept), o);
}

HostsFileResult apply_deepspeed_counts(HostsFile hosts, const Options& o) {
  if (o.num_nodes > 0) {
    if (hosts.hosts.size() < static_cast<std::size_t>(o.num_nodes)) {
      return std::vector<Diagnostic>{{"--num_nodes", 0, 0,
                                      std::to_string(o.num_nodes) + " nodes asked for, but " +
                                          hosts.path + " gives " +
                                          std::to_string(hosts.hosts.size())}};
    }
    hosts.hosts.resize(static_cast<std::size_t>(o.num_nodes));
  }
  for (auto& host : hosts.hosts) {
    if (o.num_gpus > 0) host.slots = std::min(host.slots.value_or(o.num_gpus), o.num_gpus);
    // A loopback host stays this machine (fork/exec), as it is without a port.
    if (o.ssh_port > 0 && !host.port && !is_local_host(host)) host.port = o.ssh_port;
  }
  return hosts;
}

HostsFileResult load_host_source(const Options& o) {
  Environment env;
  if (o.host_source == HostSource::slurm) {
    for (std::string_view name : kSlurmVariables) {
      const std::string key(name);
      if (const char* value = std::getenv(key.c_str())) env.emplace(key, value);
    }
  }
  return load_host_source(o, env);
}

}  // namespace dlaunch
