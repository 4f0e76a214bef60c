#include "launcher/plan/launch_spec_builder.h"

#include "launcher/config/git_source.h"

namespace dlaunch {

std::string node_label(const PlannedNode& node) {
  return node.host.name.empty() ? "node" + std::to_string(node.node_rank) : node.host.name;
}

PythonFor python_for(const Options& options, const HostEntry& host) {
  return choose_python(options.python, host.python, options.python_env);
}

LaunchSpec make_launch_spec(const Plan& plan, const PlannedNode& node, const Options& options,
                            const LaunchContext& context) {
  LaunchSpec spec;
  spec.secret = context.secret;
  spec.rdzv_host = context.rdzv_host;
  spec.rdzv_port = context.rdzv_port;
  spec.node_rank = node.node_rank;
  spec.nproc = node.nproc;
  spec.host_name = node_label(node);
  spec.argv = plan.command;
  if (options.python_program && !spec.argv.empty())
    spec.argv.front() = python_for(options, node.host).path;
  for (const auto& [name, entry] :
       layered_environment(plan.forwarded_env, node.host.env, plan.command_line_env)) {
    spec.env[name] = entry.value;
  }
  spec.interface = node.host.interface;
  if (!options.workdir.empty()) {
    spec.workdir = options.workdir;
    spec.workdir_required = true;
  } else {
    // This directory where the host has it (a shared or synced tree), else home.
    spec.workdir = context.local_workdir;
    spec.workdir_required = false;
  }
  // A manual-mode node other than 0 has no coordinator of its own to print its
  // ranks' output: its agent echoes it.
  spec.echo = !plan.coordinator && !options.quiet;
  spec.rdzv_timeout_s = options.rdzv_timeout_s;
  spec.grace_s = options.grace_s;
  spec.heartbeat_timeout_s = options.heartbeat_timeout_s;
  spec.nnodes = plan.nnodes;
  spec.master_port = plan.master_port.value_or(0);
  spec.tensorboard_dir = options.tensorboard_dir;
  spec.pass_local_rank = options.pass_local_rank;
  spec.checkpoint_dir = options.checkpoint_dir;
  spec.sync = !options.sync_dir.empty();
  if (!options.git_url.empty())
    spec.git = {options.git_url, options.git_commit, git_repository_name(options.git_url),
                plan.job};
  spec.container.image = node.host.image.empty() ? options.image : node.host.image;
  spec.container.image_file = options.image_file_name;
  if (!spec.container.image.empty() || !spec.container.image_file.empty()) {
    spec.container.engine = options.container_engine;
    spec.container.shm_size = options.shm_size;
    spec.container.mounts = options.mounts;
  }
  return spec;
}

}  // namespace dlaunch
