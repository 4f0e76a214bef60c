// The `run` command, and the launch that `dlaunch` does without a command:
// parse options, load the hosts file, plan, then either print the plan, run a
// coordinator, or (on a manual-mode node other than 0) run this node's agent
// in-process.
#include "launcher/cli/commands.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <optional>
#include <variant>

#include "common/console.h"
#include "common/exit_codes.h"
#include "common/host_color.h"
#include "common/log.h"
#include "common/posix.h"
#include "common/socket.h"
#include "common/this_machine.h"
#include "launcher/cli/detach.h"
#include "launcher/cli/job_claim_report.h"
#include "launcher/cli/load_hosts.h"
#include "launcher/cli/log_backend.h"
#include "launcher/cli/worker_node.h"
#include "launcher/config/git_source.h"
#include "launcher/config/host_source.h"
#include "launcher/config/options.h"
#include "launcher/config/python_program.h"
#include "launcher/config/secret.h"
#include "launcher/fleet/descriptor_budget.h"
#include "launcher/job/coordinator.h"
#include "launcher/output/log_sink.h"
#include "launcher/plan/plan.h"
#include "launcher/record/job_claim.h"
#include "launcher/record/job_name.h"
#include "launcher/record/job_record.h"
#include "launcher/sync/git_commit.h"
#include "launcher/sync/git_local_changes.h"
#include "launcher/sync/image_file.h"
#include "launcher/sync/sync_manifest.h"
#include "launcher/transport/agent_binary.h"
#include "launcher/transport/agent_transports.h"
#include "protocol/auth.h"
#include "protocol/launch_spec.h"
#include "protocol/rank_env.h"

namespace dlaunch {
namespace {

std::string this_host_name_or_localhost() {
  auto name = this_host_name();
  return name.empty() ? "localhost" : name;
}

// The secret of a manual-mode node (launcher/config/secret.h); node 0 prints
// the line that starts the others when it made the secret itself.
// Fails with the exit code (kExitUsage) once the error is printed.
Result<std::string, int> manual_secret(const Options& o, std::optional<std::string> secret_env,
                                       int argc, const char* const* argv) {
  ManualSecretInputs in;
  in.nnodes = o.nnodes;
  in.node_rank = o.node_rank;
  in.secret_file = o.secret_file;
  in.secret_env = std::move(secret_env);
  in.insecure_no_secret = o.insecure_no_secret;
  auto chosen = choose_manual_secret(in);
  if (!chosen) {
    console().error(chosen.error());
    return fail(kExitUsage);
  }
  auto& secret = *chosen;
  if (!secret.warning.empty()) log::warn(secret.warning);
  if (o.insecure_no_secret && o.nnodes > 1) {
    log::warn("--insecure-no-secret: any host that reaches rendezvous port ", o.rdzv_port,
              " can join this job");
  }
  if (secret.generated) {
    std::vector<std::string> words{"dlaunch"};
    for (int i = 1; i < argc; ++i) words.emplace_back(argv[i]);
    const std::string which = o.node_rank_given ? "node <N> = 1.." + std::to_string(o.nnodes - 1)
                                                : std::string("the other nodes");
    console().line("dlaunch: this job's secret was made here (no --secret-file or " +
                   std::string(kSecretEnv) + "); start " + which + " with:\n  " +
                   other_nodes_command(words, secret.secret));
  }
  return secret.secret;
}

// Whether two descriptors are the same terminal device: only then can a bar
// drawn on one be redrawn around lines written to the other.
bool same_terminal(int a, int b) {
  struct stat sa {
  }, sb{};
  return ::fstat(a, &sa) == 0 && ::fstat(b, &sb) == 0 && sa.st_rdev == sb.st_rdev;
}

bool job_named_by_user(const Options& o) {
  return !o.name.empty();
}

}  // namespace

// The ranks' variables from this shell (forwarded), --env-file and --env.
// --mount, --shm-size and --container-engine mean nothing without an image:
// silently running the ranks on the host would hide a forgotten --image.
Result<void> check_container_flags(const Plan& plan, const Options& o) {
  const char* given = !o.mounts.empty()              ? "--mount"
                      : !o.shm_size.empty()          ? "--shm-size"
                      : o.container_engine != "auto" ? "--container-engine"
                                                     : nullptr;
  if (!o.image_file.empty()) {
    // The file is what every host runs: a host's own image would not be sent.
    for (const auto& node : plan.nodes)
      if (!node.host.image.empty())
        return fail("--image-file is sent to every host, but host " + node.host.name +
                    " has its own `image` (" + node.host.image +
                    ") in the hosts file: remove one of them");
    return {};
  }
  if (given == nullptr || !o.image.empty()) return {};
  for (const auto& node : plan.nodes)
    if (!node.host.image.empty()) return {};
  return fail(std::string(given) + " needs --image (or an `image` in the hosts file)");
}

// Fails with the exit code (kExitUsage) once every error is printed.
Result<void, int> add_environment(Plan& plan, const Options& o) {
  plan.forwarded_env =
      forwarded_environment(current_environment(), o.forward_env_defaults, o.forward_env);
  EnvVars command_line;
  // deepspeed's line: its .deepspeed_env files, home first, under the others.
  if (o.deepspeed_line) {
    for (const auto& path :
         deepspeed_env_paths(std::getenv("DS_ENV_FILE"), home_directory(), current_directory())) {
      if (::access(path.c_str(), F_OK) != 0) continue;
      auto loaded = load_env_file(path);
      if (!loaded) {
        for (const auto& e : loaded.error()) console().error(e.to_string());
        return fail(kExitUsage);
      }
      console().note("read " + std::to_string(loaded->size()) + " variable" +
                     (loaded->size() == 1 ? "" : "s") + " for every rank from " + path +
                     " (deepspeed's)");
      for (auto& [k, v] : *loaded) command_line[k] = v;
    }
  }
  if (!o.env_file.empty()) {
    auto loaded = load_env_file(o.env_file);
    if (!loaded) {
      for (const auto& e : loaded.error()) console().error(e.to_string());
      return fail(kExitUsage);
    }
    for (auto& [k, v] : *loaded) command_line[k] = v;
  }
  auto assigned = parse_env_assignments(o.env);
  if (!assigned) {
    for (const auto& e : assigned.error()) console().error(e.to_string());
    return fail(kExitUsage);
  }
  for (const auto& [k, v] : command_line) plan.env_file_names.insert(k);
  for (auto& [k, v] : *assigned) {
    command_line[k] = v;  // --env wins
    plan.env_file_names.erase(k);
  }
  plan.command_line_env = std::move(command_line);
  return {};
}

namespace {

// The options, with their notes said and the log set up; fails with the exit
// code after printing --help, --version or a usage error.
Result<Options, int> parse_run_options(int argc, const char* const* argv) {
  ParsedOptions parsed = parse_options(argc, argv, command_help());
  if (!parsed) {
    const ParseStop& stop = parsed.error();
    if (stop.exit_code == 0) {
      console().out(stop.message + "\n");
    } else {
      console().error(stop.message);
      console().line("Run with --help for more information.");
    }
    return fail(stop.exit_code);
  }
  Options o = std::move(*parsed);
  setup_logging(o.verbose);
  for (const auto& note : o.notes) console().note(note);
  return o;
}

// torchrun's line on a manual-mode node (no --node-rank): whether this node
// is node 0, said on the console.
void choose_manual_node(Options& o) {
  // The node that holds node 0's address is node 0; the others get their
  // ranks from it.
  if (o.mode == Mode::manual && !o.node_rank_given && o.nnodes > 1) {
    bool node0 = o.rdzv_is_host.value_or(this_machine_is(o.master_addr));
    const std::string why =
        o.rdzv_is_host ? "--rdzv-conf is_host" : "this machine is " + o.master_addr;
    // The same line twice on one machine: the second finds node 0's port
    // taken and joins it, as torchrun's c10d store does (it would otherwise
    // fail to listen, or to claim the job's name in a shared state dir).
    if (node0 && !o.rdzv_is_host && port_listened_on(o.rdzv_port)) {
      node0 = false;
      console().note("port " + std::to_string(o.rdzv_port) +
                     " is taken on this machine: node 0 runs here already");
    }
    o.node_rank = node0 ? 0 : kRankByRendezvous;
    console().note(node0 ? "node 0 (" + why + "): the rendezvous listens on port " +
                               std::to_string(o.rdzv_port)
                         : "joining node 0 at " + o.master_addr + ":" +
                               std::to_string(o.rdzv_port) + ", which gives this node its rank");
  }
}

struct RunPlan {
  Plan plan;
  std::optional<HostsFile> hosts;
};

// The hosts, the job's name and the plan, checked; fails with the exit code
// once the error is printed.
Result<RunPlan, int> plan_run(const Options& o) {
  std::optional<HostsFile> hosts;
  if (o.mode == Mode::hosts) {
    auto loaded = load_hosts_or_report(o);
    if (!loaded) return fail(loaded.error());
    hosts = std::move(*loaded);
  }

  // A Python program is named by its script or module, not by python3.
  const std::string& named_by = o.python_program ? python_target(o.command) : o.command[0];
  std::string job = o.name.empty() ? default_job_name(named_by, std::time(nullptr)) : o.name;
  if (auto named = check_job_name(job); !named) {
    const std::string shown = job.size() > 40 ? job.substr(0, 40) + "..." : job;
    console().error("--name '" + shown + "': " + named.error());
    return fail(kExitUsage);
  }
  Plan plan = make_plan(o, hosts ? &*hosts : nullptr, job);
  for (const auto& warning : plan.warnings) log::warn(warning);
  if (auto added = add_environment(plan, o); !added) return fail(added.error());
  // A manual-mode node is this machine, named as the other nodes will see it.
  if (o.mode == Mode::manual) plan.nodes.front().host.name = this_host_name_or_localhost();
  if (auto checked = check_elastic(plan, o); !checked) {
    console().error(checked.error());
    return fail(kExitUsage);
  }
  if (auto checked = check_container_flags(plan, o); !checked) {
    console().error(checked.error());
    return fail(kExitUsage);
  }
  if (auto checked = check_ranks_filter(plan, o.ranks_filter); !checked) {
    console().error(checked.error());
    return fail(kExitUsage);
  }
  return RunPlan{std::move(plan), std::move(hosts)};
}

// What is sent to every host before the ranks start.
struct Transfers {
  std::shared_ptr<const SyncManifest> sync;   // --sync
  std::shared_ptr<const SyncManifest> image;  // --image-file
};

// --sync's manifest, --image-file's digest and --sync-git's commit, made once
// before anything starts (--dry-run counts only); fails with the exit code
// once the error is printed.
Result<Transfers, int> prepare_transfers(Options& o) {
  Transfers t;
  // --sync: listed and hashed once, before anything starts (--dry-run counts only).
  if (!o.sync_dir.empty()) {
    auto built = build_sync_manifest(o.sync_dir, !o.dry_run);
    if (!built) {
      console().error(built.error());
      return fail(kExitUsage);
    }
    t.sync = std::make_shared<const SyncManifest>(std::move(*built));
  }
  // --image-file: hashed once, named by its digest in every host's cache.
  if (!o.image_file.empty()) {
    auto read = read_image_file(o.image_file, !o.dry_run);
    if (!read) {
      console().error(read.error());
      return fail(kExitUsage);
    }
    const auto& file = *read;
    if (!o.dry_run) o.image_file_name = image_cache_name(file);
    t.image = std::make_shared<const SyncManifest>(image_file_manifest(file));
  }
  // --sync-git: one commit for every host, whatever the branch does meanwhile.
  // --dry-run asks no repository: the commit is the branch's when the job starts.
  if (!o.git_url.empty()) {
    if (!o.dry_run || is_full_object_name(o.git_ref)) {
      const auto resolved = resolve_git_commit(o.git_url, o.git_ref);
      if (!resolved.error.empty()) {
        console().error(resolved.error);
        return fail(kExitUsage);
      }
      o.git_commit = resolved.commit;
    }
    const std::string runs = o.git_commit.empty() ? (o.git_ref.empty() ? "HEAD" : o.git_ref)
                                                  : "commit " + o.git_commit.substr(0, 12);
    if (auto warning = local_changes_warning(current_directory(), o.git_url, runs))
      log::warn(*warning);
  }
  return t;
}

// --dry-run: the plan, and what would be sent to every host.
void print_dry_run(const Plan& plan, const Options& o, const Transfers& t) {
  console().out(describe_plan(plan, o));
  if (!o.git_url.empty())
    console().out(
        "code: " + o.git_url + " at " + (o.git_commit.empty() ? "" : o.git_commit + " (") +
        (o.git_ref.empty() ? "HEAD" : o.git_ref) +
        (o.git_commit.empty() ? " as the job starts (--dry-run asks no repository)" : ")") +
        ", in <workdir>/code/" + git_repository_name(o.git_url) +
        " with its submodules, on every host, before the ranks start\n");
  if (t.sync) {
    console().out("sync: " + t.sync->root + " -> " + o.workdir +
                  " on every host (created when missing), before the ranks start: " +
                  describe_manifest(*t.sync) +
                  (o.sync_delete ? "; files there that it lacks are deleted (--sync-delete)" : "") +
                  "\n");
  }
}

// The coordinator of a claimed job, its output into `job_dir`; the job's exit code.
int run_coordinator(const RunPlan& planned, const Options& o, const Transfers& t,
                    const std::string& secret, const std::string& agent,
                    const DescriptorBudget& descriptors, const std::string& job_dir,
                    const JobInfo& record) {
  const Plan& plan = planned.plan;
  // A detached job has no terminal: its stderr is coordinator.log, which holds
  // the coordinator's own messages; the ranks' output is in their logs only.
  TerminalFilter filter{o.ranks_filter, o.local_ranks_filter, o.hidden_streams,
                        o.hidden_streams_by_local_rank};
  LogSink::Settings sink_settings{job_dir,
                                  plan.hosts_in_prefix,
                                  std::move(filter),
                                  o.quiet || o.detach,
                                  20,
                                  o.no_skip || !terminal_may_skip(1)};
  sink_settings.terminal_is_tty = ::isatty(1) && ::isatty(2) && same_terminal(1, 2);
  sink_settings.color_out = color_allowed_for_fd(1);
  sink_settings.color_err = color_allowed_for_fd(2);
  for (const auto& n : plan.nodes) sink_settings.hosts.push_back(n.host.name);
  sink_settings.max_open_rank_logs = descriptors.rank_log_files;
  LogSink sink(std::move(sink_settings));
  asio::io_context io;
  AgentTransports transports = make_agent_transports(
      io, o, o.rdzv_via_ssh || (planned.hosts && planned.hosts->rendezvous.via_ssh), plan.job,
      elastic(plan, o));
  Coordinator::Settings settings{
      {plan, o, secret, agent, descriptors.relays, descriptors.sessions_each()},
      job_dir,
      record,
      t.sync,
      t.image};
  Coordinator coordinator(io, std::move(settings), transports, sink);
  const int code = coordinator.run();
  sink.flush();
  // A full or failing log disk never passes unnoticed.
  for (const auto& loss : sink.losses()) log::warn("rank log incomplete: ", loss);
  if (code != 0 || !sink.losses().empty())
    console().note("logs of job " + plan.job + " are in " + job_dir);
  return code;
}

}  // namespace

int run_command(int argc, const char* const* argv) {
  // From the first instant: a closed terminal or cron must not kill the job
  // while it is still being planned, claimed or detached.
  std::signal(SIGHUP, SIG_IGN);
  raise_descriptor_limit();
  auto parsed = parse_run_options(argc, argv);
  if (!parsed) return parsed.error();
  Options o = std::move(*parsed);
  // torchrun's way: the same line on every node, no --node-rank.
  if (o.mode == Mode::manual && !o.node_rank_given && o.nnodes > 1) choose_manual_node(o);
  auto planned = plan_run(o);
  if (!planned) return planned.error();
  Plan& plan = planned->plan;
  // Node 0 must be able to hold every agent's connection.
  DescriptorBudget descriptors;
  if (plan.coordinator) {
    descriptors = descriptor_budget(descriptor_needs(plan, o.host_source == HostSource::slurm),
                                    descriptor_limit());
    if (!descriptors.problem.empty()) {
      console().error(descriptors.problem);
      return kExitFailure;
    }
  }
  auto transfers = prepare_transfers(o);
  if (!transfers) return transfers.error();
  if (o.dry_run) {
    print_dry_run(plan, o, *transfers);
    return kExitOk;
  }

  // Read once and taken out of the environment: no rank this process starts
  // inherits it.
  std::optional<std::string> secret_env;
  if (const char* env = std::getenv(kSecretEnv)) secret_env = env;
  ::unsetenv(kSecretEnv);
  std::string secret;
  if (o.mode == Mode::manual) {
    auto made = manual_secret(o, std::move(secret_env), argc, argv);
    if (!made) return made.error();
    secret = *made;
  } else {
    secret = auth::random_bytes(auth::kSecretSize);
  }

  const auto agent = find_agent_binary();
  if (!agent) {
    console().error(agent.error());
    return kExitFailure;
  }

  // Before any thread exists: the coordinator (or a manual node's agent) is
  // the child from here on.
  Detacher detacher;
  if (o.detach) {
    if (auto parent_code = detacher.fork_coordinator()) return *parent_code;
  }
  if (!plan.coordinator) return run_worker_node(plan, o, std::move(secret), detacher);

  auto claimed =
      claim_or_report(o, plan.job, job_named_by_user(o) ? NameRule::exact : NameRule::numbered,
                      new_job_info(plan, o));
  if (!claimed) {
    detacher.failed(claimed.error());
    return claimed.error();
  }
  const auto& [job_name, job_dir, record] = *claimed;
  plan.job = job_name;
  detacher.started(job_name, job_dir + "/coordinator.log");
  return run_coordinator(*planned, o, *transfers, secret, *agent, descriptors, job_dir, record);
}

}  // namespace dlaunch
