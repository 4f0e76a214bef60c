#include "launcher/plan/plan.h"

#include <algorithm>
#include <ctime>
#include <sstream>

#include "launcher/config/options.h"
#include "launcher/plan/launch_spec_builder.h"
#include "net/candidates.h"
#include "protocol/rank_argv.h"
#include "protocol/rank_env.h"

namespace dlaunch {

std::string default_job_name(const std::string& program, long long unix_seconds) {
  std::string base = program.substr(program.find_last_of('/') + 1);
  std::string clean;
  for (char c : base) {
    const bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
    clean.push_back(ok ? c : '_');
  }
  if (clean.empty() || clean[0] == '.') clean = "job" + clean;
  const std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  ::localtime_r(&t, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
  return clean + "-" + stamp;
}

Plan make_plan(const Options& o, const HostsFile* hosts, const std::string& job) {
  Plan plan;
  plan.mode = o.mode;
  plan.job = job;
  plan.command = o.command;
  plan.master_port = o.master_port;
  const int default_nproc = o.nproc_per_node.value_or(0);

  switch (o.mode) {
    case Mode::standalone: {
      PlannedNode node;
      node.host.name = "localhost";
      node.host.address = "127.0.0.1";
      node.nproc = default_nproc;
      plan.nodes.push_back(node);
      plan.master_addr = "127.0.0.1";
      plan.rdzv_bind = "127.0.0.1";
      plan.rdzv_connect = "127.0.0.1";
      if (o.rdzv_port_given) plan.rdzv_port = o.rdzv_port;
      break;
    }
    case Mode::hosts: {
      bool all_local = true;
      std::vector<std::string> slots_win;  // hosts whose slots override -n
      for (std::size_t i = 0; i < hosts->hosts.size(); ++i) {
        PlannedNode node;
        node.node_rank = static_cast<int>(i);
        node.host = hosts->hosts[i];
        node.local = is_local_host(node.host);
        node.nproc = node.host.slots.value_or(default_nproc);
        if (o.nproc_per_node && *o.nproc_per_node > 0 && node.host.slots &&
            *node.host.slots != *o.nproc_per_node)
          slots_win.push_back(node.host.name);
        all_local = all_local && node.local;
        plan.nodes.push_back(node);
      }
      if (!slots_win.empty()) {
        std::string names;
        for (std::size_t i = 0; i < slots_win.size() && i < 5; ++i)
          names += (i ? ", " : "") + slots_win[i];
        if (slots_win.size() > 5) names += " and " + std::to_string(slots_win.size() - 5) + " more";
        plan.warnings.push_back("--nproc-per-node " + std::to_string(*o.nproc_per_node) +
                                " applies only to hosts without a slot count: the host list's "
                                "slots win on " +
                                names);
      }
      plan.nnodes = static_cast<int>(plan.nodes.size());
      // --spares N: the last N hosts of whichever list gave them.
      for (int i = plan.nnodes - 1, left = o.spares; i >= 0 && left > 0; --i, --left)
        plan.nodes[static_cast<std::size_t>(i)].host.spare = true;
      plan.hosts_in_prefix = plan.nnodes > 1;
      plan.rdzv_port = o.rdzv_port_given ? o.rdzv_port : hosts->rendezvous.port.value_or(0);
      plan.rdzv_connect = hosts->rendezvous.address;
      plan.all_nodes_local = all_local;
      plan.probe_master = !all_local && plan.nnodes > 1;
      plan.node0_address = plan.nodes.front().host.address;
      if (!o.master_addr.empty()) {
        plan.configured_master = o.master_addr;
        plan.configured_master_by = "--master-addr";
      } else if (!hosts->rendezvous.master_address.empty()) {
        plan.configured_master = hosts->rendezvous.master_address;
        plan.configured_master_by = "master_address in " + hosts->path + ":" +
                                    std::to_string(hosts->rendezvous.master_address_line);
      }
      if (all_local) {
        plan.rdzv_bind = "127.0.0.1";
        if (plan.rdzv_connect.empty()) plan.rdzv_connect = "127.0.0.1";
        plan.master_addr = "127.0.0.1";
      } else {
        plan.rdzv_bind = "0.0.0.0";
        const auto& first = plan.nodes.front();
        // Node 0's own ranks are the TCPStore server; the others reach it at the
        // address the hosts file gives (for a local node 0: our rendezvous address).
        plan.master_addr = first.local ? hosts->rendezvous.address : first.host.address;
      }
      if (!plan.configured_master.empty()) plan.master_addr = plan.configured_master;
      // Through reverse forwards on the SSH connections, every agent arrives
      // from this machine's loopback: nothing else needs to reach the port.
      plan.rdzv_via_ssh = o.rdzv_via_ssh || hosts->rendezvous.via_ssh;
      if (plan.rdzv_via_ssh) plan.rdzv_bind = "127.0.0.1";
      break;
    }
    case Mode::manual: {
      plan.nnodes = o.nnodes;
      plan.node_rank = o.node_rank;
      plan.coordinator = o.node_rank == 0;
      plan.hosts_in_prefix = o.nnodes > 1;
      PlannedNode node;
      node.node_rank = o.node_rank;
      node.host.name = "";  // this machine's host name, filled in at start
      node.host.address = "127.0.0.1";
      node.nproc = default_nproc;
      plan.nodes.push_back(node);
      plan.master_addr = o.master_addr;
      plan.probe_master = o.nnodes > 1;
      plan.configured_master = o.master_addr;
      plan.configured_master_by = "--master-addr";
      // torchrun's --local-addr: the address node 0 gives its ranks' peers.
      if (o.node_rank == 0 && !o.local_addr.empty()) {
        plan.configured_master = o.local_addr;
        plan.configured_master_by = "--local-addr";
      }
      plan.rdzv_bind = "0.0.0.0";
      plan.rdzv_port = o.rdzv_port;
      plan.rdzv_connect = o.node_rank == 0 ? "127.0.0.1" : o.master_addr;
      break;
    }
  }
  return plan;
}

std::size_t spare_count(const Plan& plan) {
  return static_cast<std::size_t>(std::count_if(plan.nodes.begin(), plan.nodes.end(),
                                                [](const auto& n) { return n.host.spare; }));
}

// The same rule as Membership's (launcher/fleet/membership.cpp): spares, or a
// MIN:MAX that, cut to the host list, is a range or leaves hosts over.
// The hosts a job may run on: its host list, or in manual mode the --nnodes
// places that nodes join.
std::size_t host_count(const Plan& plan) {
  return plan.mode == Mode::manual ? static_cast<std::size_t>(plan.nnodes) : plan.nodes.size();
}

bool elastic(const Plan& plan, const Options& o) {
  if (spare_count(plan) != 0) return true;
  if (o.max_nodes == 0) return false;
  const auto hosts = host_count(plan);
  const auto max = std::min(o.max_nodes, hosts);
  return std::min(o.min_nodes, max) < max || max < hosts;
}

Result<void> check_elastic(const Plan& plan, const Options& o) {
  const auto hosts = host_count(plan);
  if (static_cast<std::size_t>(o.spares) >= hosts && o.spares > 0) {
    return fail("--spares " + std::to_string(o.spares) +
                " leaves no host to run ranks: the host list has " + std::to_string(hosts));
  }
  if (plan.mode == Mode::hosts && spare_count(plan) == hosts) {
    return fail("every host is marked spare = true: at least one must run ranks");
  }
  if (o.min_nodes > hosts) {
    return fail("--nnodes " + std::to_string(o.min_nodes) + ":" + std::to_string(o.max_nodes) +
                " needs at least " + std::to_string(o.min_nodes) + " hosts; the host list has " +
                std::to_string(hosts));
  }
  return {};
}

Result<void> ranks_outside_world(const std::set<int>& filter, int world) {
  if (filter.empty() || *filter.rbegin() < world) return {};
  std::string outside;
  for (int r : filter) {
    if (r >= world) outside += (outside.empty() ? "" : ",") + std::to_string(r);
  }
  return fail("--ranks-filter " + outside + ": this job has ranks 0.." + std::to_string(world - 1) +
              " only");
}

Result<void> check_ranks_filter(const Plan& plan, const std::set<int>& filter) {
  if (filter.empty() || plan.mode == Mode::manual) return {};
  int world = 0;
  for (const auto& node : plan.nodes) {
    if (node.nproc <= 0) return {};  // decided by the agents
    world += node.nproc;
  }
  return ranks_outside_world(filter, world);
}

std::string describe_plan(const Plan& plan, const Options& o) {
  std::ostringstream out;
  const char* mode = plan.mode == Mode::standalone            ? "one machine"
                     : o.host_source == HostSource::slurm     ? "Slurm allocation"
                     : o.host_source == HostSource::hostfile  ? "hostfile"
                     : o.host_source == HostSource::host_list ? "host list"
                     : plan.mode == Mode::hosts               ? "hosts file"
                                                              : "manual";
  out << "job " << plan.job << " (" << mode << ", " << plan.nnodes << " node"
      << (plan.nnodes == 1 ? "" : "s") << ")\n";
  if (elastic(plan, o)) {
    const auto spares = spare_count(plan);
    const auto max =
        o.max_nodes != 0 ? std::min(o.max_nodes, plan.nodes.size()) : plan.nodes.size() - spares;
    const auto min = o.min_nodes != 0 ? std::min(o.min_nodes, max) : max;
    out << "elastic: runs on " << min << (min == max ? "" : " to " + std::to_string(max))
        << " nodes; " << spares << (spares == 1 ? " spare takes" : " spares take")
        << " the place of a lost node; a node is retired when lost or after its ranks "
           "failed in "
        << o.node_fail_limit << " rounds (--node-fail-limit); starts once every host joined, "
        << "or after --join-timeout " << o.join_timeout_s << " s with those that did\n";
  }
  out << "command:";
  for (const auto& a : rank_argv(plan.command, o.pass_local_rank, "<local rank>"))
    out << " '" << a << "'";
  out << "\n";
  out << "rendezvous: listens on " << plan.rdzv_bind << ":"
      << (plan.rdzv_port ? std::to_string(plan.rdzv_port) : std::string("<any free port>"))
      << (plan.coordinator ? "" : " (on node 0)")
      << (plan.rdzv_via_ssh ? "; SSH hosts reach it through a reverse forward on their connection"
                            : "")
      << "\n";
  if (plan.probe_master) {
    // What can be said before any agent runs: the order; node 0's interfaces
    // and the probe results come at start (-v shows them).
    net::CandidateSources sources;
    sources.configured = plan.configured_master;
    sources.configured_by = plan.configured_master_by;
    sources.node0_address = plan.node0_address;
    sources.all_nodes_local = plan.all_nodes_local;
    out << "MASTER_ADDR: probed at start from every node; the first of node 0's addresses that "
           "all reach wins:\n";
    int n = 0;
    for (const auto& c : net::master_candidates(sources))
      out << "  " << ++n << ". " << c.address << " (" << net::describe(c, sources) << ")\n";
    out << "  " << ++n
        << ". node 0's interface addresses (real NICs first, virtual and container "
           "bridges last, no loopback or link-local)\n";
    out << "NCCL_SOCKET_IFNAME, GLOO_SOCKET_IFNAME: each host's interface towards MASTER_ADDR "
           "(the hosts file's `interface` wins; a value already set is kept)\n";
  }
  int total = 0;
  bool known = plan.mode != Mode::manual;
  for (const auto& node : plan.nodes) {
    if (node.host.spare) continue;
    total += node.nproc;
    known = known && node.nproc > 0;
  }
  int offset = 0;
  int node_rank = -1;  // spares take none
  const auto spares = spare_count(plan);
  for (const auto& node : plan.nodes) {
    if (node.host.spare) {
      out << "spare: " << node.host.name << " (" << node.host.address
          << "), runs ranks only in place of a lost node\n";
      continue;
    }
    ++node_rank;
    out << "node " << (plan.mode == Mode::hosts ? node_rank : node.node_rank) << ": "
        << (node.host.name.empty() ? "this host" : node.host.name) << " (" << node.host.address
        << ", "
        << (node.local                                    ? "local"
            : node.host.transport == TransportKind::slurm ? "srun"
                                                          : "ssh")
        << (!node.local && !node.host.jump.empty() && node.host.jump != "none"
                ? " via " + node.host.jump
                : std::string())
        << "), ";
    if (node.nproc > 0 && known) {
      out << "ranks " << offset << ".." << offset + node.nproc - 1;
    } else if (node.nproc > 0) {
      out << node.nproc << " ranks";
    } else if (node.nproc == kNprocAuto) {
      out << "one rank per GPU found there (else one per CPU: --nproc-per-node auto)";
    } else if (node.nproc < 0) {
      out << "one rank per CPU there";
    } else {
      out << "one rank per GPU found there (else 1)";
    }
    out << "\n";
    const LaunchSpec node_spec = make_launch_spec(plan, node, o, {});
    out << "  workdir: "
        << (!o.sync_dir.empty()  ? o.workdir + " (--sync; created when missing)"
            : !o.workdir.empty() ? o.workdir + " (--workdir; must exist there)"
                                 : std::string("this directory where it exists there, else home"))
        << "\n";
    if (!o.image_file.empty()) {
      out << "  image: " << (o.image.empty() ? "what " + o.image_file + " holds" : o.image)
          << " (--image-file " << o.image_file << ", sent to the host's image cache; "
          << (o.container_engine == "auto" ? "the first container engine found there"
                                           : o.container_engine)
          << ")\n";
    } else if (!node_spec.container.image.empty()) {
      out << "  image: " << node_spec.container.image << " ("
          << (o.container_engine == "auto" ? "the first container engine found there"
                                           : o.container_engine)
          << (node.host.image.empty() ? "" : "; the hosts file's image") << ")\n";
    }
    if (o.python_program && o.verbose > 0) {
      const auto python = python_for(o, node.host);
      out << "  python: " << python.path
          << (python.by == "PATH"         ? " (the first on the PATH of the ranks there)"
              : python.by == "hosts file" ? " (the hosts file's python)"
                                          : " (" + python.by + ")")
          << "\n";
    }
    const auto layered =
        layered_environment(plan.forwarded_env, node.host.env, plan.command_line_env);
    if (!layered.empty()) {
      out << "  environment above the host's own:";
      for (const auto& [k, e] : layered) {
        std::string_view source = env_source_name(e.source);
        if (e.source == EnvSource::command_line && plan.env_file_names.contains(k))
          source = "--env-file";
        if (e.source == EnvSource::hosts_file && k == "CUDA_VISIBLE_DEVICES" &&
            !node.host.visible_devices_by.empty())
          source = node.host.visible_devices_by;
        out << " " << k << "=" << e.value << " (" << source << ")";
      }
      out << "\n";
    }
    const int shown = node.nproc > 0 ? node.nproc : 1;
    for (int local = 0; local < shown; ++local) {
      proto::Assign a;
      a.job = plan.job;
      a.max_restarts = o.max_restarts;
      a.node_rank = plan.mode == Mode::hosts ? node_rank : node.node_rank;
      a.nnodes = plan.nnodes - static_cast<int>(spares);
      a.rank_offset = known ? offset : 0;
      a.local_world_size = shown;
      a.world_size = known ? total : shown;
      a.master_addr = plan.probe_master          ? "<probed at start>"
                      : plan.master_addr.empty() ? "<this host>"
                                                 : plan.master_addr;
      if (plan.probe_master && node.host.interface.empty())
        a.socket_ifname = "<towards MASTER_ADDR>";
      const EnvMap env = rank_environment(a, local, node_spec, {});
      out << "  local rank " << local << ":";
      for (const auto& [k, v] : env) {
        if (!known && (k == "RANK" || k == "ROLE_RANK" || k == "WORLD_SIZE" ||
                       k == "ROLE_WORLD_SIZE" || k == "LOCAL_WORLD_SIZE")) {
          out << " " << k << "=<at rendezvous>";
        } else if (k == "MASTER_PORT") {
          out << " MASTER_PORT="
              << (plan.master_port ? std::to_string(*plan.master_port)
                                   : std::string("<free port on node 0>"));
        } else {
          out << " " << k << "=" << v;
        }
      }
      out << "\n";
    }
    offset += node.nproc;
  }
  return out.str();
}

}  // namespace dlaunch
