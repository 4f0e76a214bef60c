#include "launcher/config/host_source.h"

#include <algorithm>
#include <cstdlib>

#include "launcher/hosts/host_list.h"

namespace dlaunch {

namespace {

// The hosts as the source lists them, before --include/--exclude.
HostsFileResult load_listed(const Options& o, const Environment& env) {
  switch (o.host_source) {
    case HostSource::hosts_file:
      return load_hosts_file(o.hosts_file);
    case HostSource::hostfile:
      return load_hostfile(o.hostfile);
    case HostSource::host_list:
      return parse_host_arg(o.host_list);
    case HostSource::slurm: {
      auto loaded = slurm_hosts(env);
      if (loaded && o.nproc_per_node) {
        for (auto& host : loaded->hosts) host.slots.reset();
      }
      return loaded;
    }
    case HostSource::none:
      break;
  }
  return fail(std::vector<Diagnostic>{{"dlaunch", 0, 0, "no host list was given"}});
}

}  // namespace

HostsFileResult load_host_source(const Options& o, const Environment& env) {
  auto loaded = load_listed(o, env);
  if (!loaded) return loaded;
  std::vector<Diagnostic> warnings = std::move(loaded->warnings);
  auto filtered = filter_hosts(std::move(*loaded), o.include, o.exclude);
  if (!filtered) return filtered;
  filtered->warnings = std::move(warnings);
  return apply_deepspeed_counts(std::move(*filtered), o);
}

HostsFileResult apply_deepspeed_counts(HostsFile hosts, const Options& o) {
  if (o.num_nodes > 0) {
    if (hosts.hosts.size() < static_cast<std::size_t>(o.num_nodes)) {
      return fail(std::vector<Diagnostic>{{"--num_nodes", 0, 0,
                                           std::to_string(o.num_nodes) + " nodes asked for, but " +
                                               hosts.path + " gives " +
                                               std::to_string(hosts.hosts.size())}});
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
