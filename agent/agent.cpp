#include "agent/agent.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include <cerrno>
#include <cstring>

#include <csignal>
#include <cstdio>

#include "agent/git_checkout.h"
#include "agent/host_facts.h"
#include "agent/image_cache.h"
#include "agent/interfaces.h"
#include "agent/nccl_allreduce.h"
#include "agent/peer_bench.h"
#include "agent/port_holder.h"
#include "agent/prober.h"
#include "agent/rank_error_file.h"
#include "common/console.h"
#include "common/directory_overlap.h"
#include "common/exit_codes.h"
#include "common/gpus.h"
#include "common/log.h"
#include "common/overloaded.h"
#include "common/posix.h"
#include "common/socket.h"
#include "protocol/auth.h"
#include "protocol/rank_argv.h"

namespace dlaunch {

Agent::Agent(asio::io_context& io, LaunchSpec spec, int stdin_fd, int pulse_fd)
    : io_(io),
      spec_(std::move(spec)),
      supervisor_(io, process_ops_,
                  RankSupervisor::Callbacks{
                      [this](int rank, proto::Stream stream, std::string_view text,
                             proto::LineEnd end) { on_line(rank, stream, text, end); },
                      [this](const proto::RankExit& exit) { report_exit(exit); },
                      [this] { handle(agent_event::RanksEnded{}); },
                      [this](std::size_t left_alive) {
                        if (left_alive > 0)
                          log::warn(left_alive, " leftover processes would not die");
                        handle(agent_event::LeftoversSwept{});
                      }}),
      sync_wait_timer_(io),
      child_signals_(io, SIGCHLD),
      stop_signals_(io, SIGINT, SIGTERM),
      drain_timer_(io),
      pulse_(io, pulse_fd) {
  if (stdin_fd >= 0) {
    asio::error_code ec;
    stdin_.emplace(io);
    stdin_->assign(::dup(stdin_fd), ec);
    if (ec) stdin_.reset();  // a regular file or /dev/null cannot be watched
  }
}

Agent::~Agent() = default;

void Agent::start() {
  // A hung-up terminal or SSH session must not kill the job by itself; the
  // coordinator's stdin and the TCP link decide that.
  std::signal(SIGHUP, SIG_IGN);
  std::signal(SIGPIPE, SIG_IGN);
  // Ctrl-Z on dlaunch's terminal reaches local agents too; stopped, they
  // would hold their ranks until declared dead (see Coordinator::watch_suspend).
  std::signal(SIGTSTP, SIG_IGN);
  if (!become_subreaper())
    log::warn("cannot become a child subreaper; setsid grandchildren may escape");
  inherited_env_ = current_environment();
  if (!settle_workdir()) {
    finish(kExitUsage);
    return;
  }
  if (!spec_.git.url.empty() && !spec_.check) {
    auto dir = checkout_git(spec_.git, ranks_directory(), spec_.env);
    if (!dir) {
      log::error(spec_.host_name, ": --sync-git ", spec_.git.url, ": ", dir.error());
      finish(kExitUsage);
      return;
    }
    log::debug(spec_.host_name, ": ", dir->dir, " at ", spec_.git.commit);
    checkout_hold_.emplace(std::move(dir->hold));
  }
  gpus_ = count_gpus();
  if (!prepare_containers()) {
    finish(kExitUsage);
    return;
  }
  if (!spec_.check && !containers_) {
    if (auto hook = make_python_stack_hook()) {
      stack_hook_ = std::move(*hook);
    } else {
      log::warn(spec_.host_name, ": ", hook.error(), "; `dlaunch stacks` shows no Python frames");
    }
  }
  // 0 (gpu, or no flag): one rank per GPU, else 1; -1 (cpu): one per CPU;
  // -2 (auto): one per GPU, else one per CPU, as torchrun's.
  const int cpus = static_cast<int>(std::clamp(::sysconf(_SC_NPROCESSORS_ONLN), 1L, 4096L));
  nproc_ = spec_.nproc > 0     ? spec_.nproc
           : spec_.nproc == -1 ? cpus
           : spec_.nproc == -2 ? (gpus_ > 0 ? gpus_ : cpus)
                               : std::max(1, gpus_);
  machine_.emplace(AgentStateMachine::Node{nproc_, spec_.grace_s});
  watch_signals();
  watch_stdin();
  // Before joining: the coordinator's FactsRequest is answered at once, so its
  // round trip bounds the clock skew it measures.
  if (spec_.check) {
    // A check agent's argv names the Python to look at (a job's, for this host).
    const std::string python = spec_.argv.empty() ? "python3" : spec_.argv.front();
    facts_ = collect_host_facts(std::chrono::seconds(20), python);
    const auto containers = container_facts(spec_.container);
    facts_->container_engine = fact_text(containers.engine);
    facts_->image_id = fact_text(containers.image_id);
    if (!spec_.git.name.empty()) {
      const auto commit = checkout_commit(ranks_directory() + "/code/" + spec_.git.name);
      facts_->git_commit = commit.empty() ? "none" : fact_text(commit);
    }
  }

  proto::Join join;
  join.node_rank = spec_.node_rank;
  join.nproc = nproc_;
  join.gpus = gpus_;
  join.host = spec_.host_name;
  interfaces_ = list_interfaces();
  ProbeListener::Limits limits;
  // `dlaunch check`'s bulk tests write to it for up to their whole length.
  if (spec_.check) limits.lifetime = std::chrono::milliseconds(proto::kMaxPeerTestMs + 10'000);
  probe_listener_.emplace(io_, static_cast<std::uint16_t>(spec_.master_port), limits);
  join.probe_port = probe_listener_->port();
  if (spec_.master_port != 0 && join.probe_port != spec_.master_port) {
    // Rank 0 listens on MASTER_PORT on node 0: starting it there would only
    // end in EADDRINUSE after every rank had started.
    if (spec_.node_rank == 0 && !spec_.check) {
      log::error("--master-port ", spec_.master_port, " cannot be used: on ", spec_.host_name,
                 " (node 0, where rank 0 listens) ", describe_port_in_use(spec_.master_port),
                 "; pick another port or leave --master-port out for a free one");
      finish(kExitUsage);
      return;
    }
    log::warn("--master-port ", spec_.master_port, " is in use on this host (", spec_.host_name,
              "): if this is node 0, its rank 0 cannot listen there");
  }
  join.master_port = join.probe_port != 0 ? join.probe_port : find_free_port();
  join.interfaces = interfaces_;
  join.pid = ::getpid();
  join.nnodes = spec_.nnodes;
  join.machine_id = machine_identity();
  RendezvousClient::Options options;
  options.host = spec_.rdzv_host;
  options.port = spec_.rdzv_port;
  options.connect_deadline = std::chrono::seconds(spec_.rdzv_timeout_s);
  options.heartbeat_timeout = std::chrono::seconds(spec_.heartbeat_timeout_s);
  options.first_connect_jitter = RendezvousClient::jitter_for(spec_.nnodes, spec_.node_rank);
  // The ranks' output queued here before their pipes wait: 1 MiB absorbs a
  // burst, and the kernel's socket buffers (autotuned to the link's
  // bandwidth-delay product) keep a long link full, so more only costs the
  // host memory (4 MiB took the agent's peak RSS to 10 MiB in a flood).
  options.output_limit = 1024 * 1024;
  client_ = std::make_unique<RendezvousClient>(
      io_, options, spec_.secret, join,
      RendezvousClient::Callbacks{
          [this] {
            log::debug("joined the rendezvous as node ", spec_.node_rank);
            handle(agent_event::Joined{});
          },
          [this](proto::Message&& m) { on_message(std::move(m)); },
          [this](const std::string& reason) { handle(agent_event::CoordinatorLost{reason}); },
          // A refused handshake is a configuration error, as a refused Join.
          [this](const std::string& reason) { handle(agent_event::RejectReceived{reason}); }});
  client_->on_output_space([this] { supervisor_.resume_output(); });
  client_->start();
}

// The ranks' working directory: --workdir must exist here (--sync creates
// it); the coordinator's directory by default is used where this host has it,
// else the agent's own. "~/" is this user's home directory.
bool Agent::settle_workdir() {
  if (spec_.workdir.empty()) return true;
  if (spec_.workdir == "~" || spec_.workdir.starts_with("~/")) {
    const std::string dir = find_home_directory();
    if (dir.empty()) {
      log::error("--workdir ", spec_.workdir, " is not usable on ", spec_.host_name,
                 ": no home directory");
      return false;
    }
    spec_.workdir = dir + spec_.workdir.substr(1);
  }
  // --sync's directory, and a --workdir that --sync-git clones into, are made.
  if (spec_.sync || (!spec_.git.url.empty() && spec_.workdir_required)) {
    std::error_code ec;
    std::filesystem::create_directories(spec_.workdir, ec);
    if (ec) {
      log::error("--workdir ", spec_.workdir, " cannot be created on ", spec_.host_name, ": ",
                 ec.message());
      return false;
    }
  }
  struct stat st {};
  const int found = ::stat(spec_.workdir.c_str(), &st);
  if (found == 0 && S_ISDIR(st.st_mode)) return true;
  const std::string reason = found == 0 ? "not a directory" : std::strerror(errno);
  if (spec_.workdir_required) {
    log::error("--workdir ", spec_.workdir, " is not usable on ", spec_.host_name, ": ", reason);
    return false;
  }
  log::debug("no ", spec_.workdir, " on this host; the ranks start in ", current_directory());
  spec_.workdir.clear();
  return true;
}

void Agent::watch_signals() {
  child_signals_.async_wait([this](const asio::error_code& ec, int) {
    if (ec) return;
    supervisor_.reap();
    watch_signals();
  });
  // Armed once: the first SIGINT or SIGTERM decides the exit code.
  stop_signals_.async_wait([this](const asio::error_code& ec, int signal) {
    if (!ec) handle(agent_event::StopSignalled{signal});
  });
}

void Agent::watch_stdin() {
  if (!stdin_) return;
  stdin_->async_read_some(
      asio::buffer(stdin_buffer_), [this](const asio::error_code& ec, std::size_t) {
        if (ec == asio::error::operation_aborted || machine_->state() == AgentState::finished)
          return;
        if (ec) {
          handle(agent_event::CoordinatorLost{
              "the coordinator closed this agent's input (dlaunch exited or its SSH connection "
              "dropped)",
              true});
          return;
        }
        watch_stdin();
      });
}

void Agent::on_message(proto::Message&& message) {
  if (spec_.check && std::holds_alternative<proto::Assign>(message)) {
    log::warn("ignoring an assignment: this agent only checks the host");
    return;
  }
  if (std::holds_alternative<proto::FactsRequest>(message)) {
    answer_facts_request();
  } else if (auto* test = std::get_if<proto::PeerTest>(&message)) {
    answer_peer_test(*test);
  } else if (auto* nccl = std::get_if<proto::NcclTest>(&message)) {
    answer_nccl_test(*nccl);
  } else if (auto* assign = std::get_if<proto::Assign>(&message)) {
    // Every host sharing the --sync destination has compared and reported.
    if (sync_owner_ && sync_markers_) {
      remove_sync_markers(*sync_markers_);
      sync_markers_.reset();
    }
    handle(agent_event::AssignmentReceived{std::move(*assign)});
  } else if (auto* stop = std::get_if<proto::Stop>(&message)) {
    handle(agent_event::StopReceived{std::move(*stop)});
  } else if (auto* reject = std::get_if<proto::Reject>(&message)) {
    handle(agent_event::RejectReceived{"the coordinator refused this agent: " + reject->reason});
  } else if (auto* probe = std::get_if<proto::Probe>(&message)) {
    answer_probe(*probe);
  } else if (auto* offer = std::get_if<proto::SyncOffer>(&message)) {
    on_sync_offer(std::move(*offer));
  } else if (auto* data = std::get_if<proto::SyncData>(&message)) {
    on_sync_data(*data);
  } else if (auto* chunk = std::get_if<proto::FileChunk>(&message)) {
    on_checkpoint_chunk(*chunk);
  } else if (auto* stacks = std::get_if<proto::StacksRequest>(&message)) {
    answer_stacks(*stacks);
  }
}

void Agent::report_exit(proto::RankExit exit) {
  const auto file = error_files_.find(exit.rank);
  if (file != error_files_.end()) {
    if (exit.exit_code != 0 || exit.signal != 0) exit.error = read_rank_error(file->second);
    ::unlink(file->second.c_str());
    error_files_.erase(file);
  }
  if (client_) client_->send(exit);
}

void Agent::answer_stacks(const proto::StacksRequest& request) {
  std::vector<RankToInspect> ranks;
  const auto now = std::chrono::steady_clock::now();
  for (const auto& [rank, pid] : supervisor_.running_ranks()) {
    if (!request.ranks.empty() &&
        std::find(request.ranks.begin(), request.ranks.end(), rank) == request.ranks.end())
      continue;
    const auto last = last_line_.find(rank);
    const std::int64_t silent =
        last == last_line_.end()
            ? -1
            : std::chrono::duration_cast<std::chrono::milliseconds>(now - last->second).count();
    const auto flight = flight_paths_.find(rank);
    ranks.push_back({rank, pid, silent, stack_hook_ ? stack_hook_->directory : std::string(),
                     flight != flight_paths_.end() ? flight->second : FlightRecorderPaths{}});
  }
  // Detached: a job stopped meanwhile ends this process. Every rank at once,
  // so that their samples cover the same moment and a slow gdb delays no other.
  std::thread([&io = io_, this, id = request.id, ranks = std::move(ranks)] {
    const StackTools tools = StackTools::on_this_host();
    std::vector<proto::StacksReport> reports(ranks.size());
    std::vector<std::thread> takers;
    for (std::size_t i = 0; i < ranks.size(); ++i)
      takers.emplace_back([&, i] { reports[i] = take_rank_stack(ranks[i], tools); });
    for (auto& t : takers) t.join();
    asio::post(io, [this, id, reports = std::move(reports)]() mutable {
      if (!client_) return;
      for (auto& r : reports) {
        r.id = id;
        client_->send(r);
      }
      proto::StacksReport last;
      last.id = id;
      client_->send(last);
    });
  }).detach();
}

DirectorySender& Agent::checkpoint_sender() {
  if (!checkpoint_) {
    checkpoint_ = std::make_unique<DirectorySender>(
        io_, in_workdir(spec_, spec_.checkpoint_dir),
        DirectoryFollower::Options{.set = proto::FileSet::checkpoint, .settled_only = true},
        // A checkpoint can be gigabytes: sent as fast as the connection
        // drains, still behind the ranks' output.
        DirectorySender::Pace{std::chrono::milliseconds(100), 8 << 20}, "--checkpoint-dir",
        [this] { return client_.get(); });
  }
  return *checkpoint_;
}

// Written in the order the coordinator sent it, before the Assign that
// follows on the same connection: the ranks find the checkpoint in place.
void Agent::on_checkpoint_chunk(const proto::FileChunk& chunk) {
  if (chunk.set != proto::FileSet::checkpoint || spec_.checkpoint_dir.empty()) {
    log::warn("ignoring a file from the coordinator: this agent has no --checkpoint-dir");
    return;
  }
  if (!checkpoint_in_) {
    checkpoint_in_.emplace(in_workdir(spec_, spec_.checkpoint_dir),
                           FileMirror::Options{.whole_files = true,
                                               .what = "checkpoint",
                                               .source = "the coordinator",
                                               .private_files = false});
  }
  if (auto written = checkpoint_in_->write(chunk); !written) {
    log::warn(spec_.host_name, ": ", written.error());
    return;
  }
  if (chunk.complete) checkpoint_sender().mark_sent(chunk.path);
}

void Agent::flush_senders(std::function<void()> done) {
  auto then_checkpoint = [this, done = std::move(done)]() mutable {
    if (checkpoint_ && checkpoint_->started()) {
      checkpoint_->flush_then(std::move(done));
    } else {
      done();
    }
  };
  if (tensorboard_) {
    tensorboard_->flush_then(std::move(then_checkpoint));
  } else {
    then_checkpoint();
  }
}

// --image-file into the image cache, then --sync into the working directory,
// before any Assign; each transfer's first offer batch says where it goes.
void Agent::on_sync_offer(proto::SyncOffer&& offer) {
  if (!sync_) {
    if (offer.first != 0) return;  // the rest of a transfer that failed
    sync_into_ = offer.into;
    const bool image = offer.into == proto::SyncInto::image_cache;
    std::string dest;
    std::string refused;
    if (image && (!containers_ || spec_.container.image_file.empty())) {
      refused = "this agent was not started for --image-file";
    } else if (image) {
      auto cache = image_cache_directory();
      if (cache) {
        dest = *cache;
      } else {
        refused = cache.error();
      }
    } else if (!spec_.sync) {
      refused = "this agent was not started for --sync";
    } else {
      dest = ranks_directory();
      refused = describe_overlap(directory_overlap(offer.source, dest), offer.source.path, dest);
    }
    if (!refused.empty()) {
      if (client_) client_->send(proto::SyncDone{0, 0, 0, refused});
      return;
    }
    log::debug(image ? "image file into " : "sync into ", dest);
    sync_ = std::make_unique<SyncReceiver>(dest, image);
    if (!image) sync_markers_ = sync_markers(dest, spec_.secret);
  }
  if (!sync_->on_offer(std::move(offer))) return end_sync();
  if (!sync_->offer_complete()) return;
  // Files in the image cache are named by their content: hosts sharing it
  // (an NFS home) may write one at the same time, each renaming it into place.
  if (sync_into_ == proto::SyncInto::image_cache) return compare_sync();
  sync_owner_ = claim_sync_destination(*sync_markers_);
  if (sync_owner_) return compare_sync();
  log::info("--sync: ", sync_->dest(), " is shared with another host of this job, which writes ",
            "it; waiting for it, then comparing");
  wait_for_sync_owner();
}

// Another host of this job writes the shared destination: compare once its
// tree is in place (then nothing is asked for that it wrote).
void Agent::wait_for_sync_owner() {
  if (!sync_) return;
  if (sync_done_published(*sync_markers_)) return compare_sync();
  sync_wait_timer_.expires_after(std::chrono::milliseconds(100));
  sync_wait_timer_.async_wait([this](const asio::error_code& ec) {
    if (!ec) wait_for_sync_owner();
  });
}

// Hashing what is already here goes a few MiB at a time, so heartbeats and
// the coordinator's messages are served in between.
void Agent::compare_sync() {
  if (!sync_) return;
  bool done = false;
  if (!sync_->compare_step(8 * 1024 * 1024, &done)) return end_sync();
  if (!done) {
    asio::post(io_, [this] { compare_sync(); });
    return;
  }
  for (auto& want : sync_->take_wants())
    if (client_) client_->send(want);
  if (sync_->data_complete()) end_sync();
}

void Agent::on_sync_data(const proto::SyncData& data) {
  if (!sync_) return;
  if (!sync_->on_data(data) || sync_->data_complete()) end_sync();
}

void Agent::end_sync() {
  proto::SyncDone done = sync_->finish();
  const std::string dest = sync_->dest();
  sync_.reset();
  if (sync_into_ == proto::SyncInto::image_cache) {
    if (done.error.empty()) return ready_image(dest + "/" + spec_.container.image_file, done);
    log::error(spec_.host_name, ": --image-file into ", dest, ": ", done.error);
  } else {
    if (sync_owner_ && sync_markers_) publish_sync_done(*sync_markers_);
    if (!done.error.empty()) log::error("--sync into ", dest, ": ", done.error);
  }
  if (client_) client_->send(done);
}

// Loading an archive takes seconds to minutes: off the event loop, so that
// heartbeats go on. Detached: a job stopped meanwhile ends this process, and
// the guardian the engine's client.
void Agent::ready_image(const std::string& file, proto::SyncDone done) {
  log::debug(file, done.bytes_received == 0 ? " was in the cache" : " received");
  std::thread([&io = io_, this, host = *containers_, file, wanted = spec_.container.image,
               done]() mutable {
    std::string image;
    if (auto ready = ready_cached_image(host, file, wanted)) {
      image = *ready;
    } else {
      done.error = ready.error();
    }
    asio::post(io, [this, image = std::move(image), done = std::move(done)] {
      on_image_ready(image, done);
    });
  }).detach();
}

void Agent::on_image_ready(const std::string& image, const proto::SyncDone& done) {
  if (done.error.empty()) {
    // Said as for --image with `auto`; the name is news with --image-file alone.
    const bool news = spec_.container.engine == "auto" || spec_.container.image.empty();
    spec_.container.image = image;
    if (news)
      log::info(spec_.host_name, ": ranks run in containers of ", image, " (--image-file, ",
                containers_->version, ")");
  } else {
    log::error(spec_.host_name, ": --image-file: ", done.error);
  }
  if (client_) client_->send(done);
}

void Agent::answer_probe(const proto::Probe& probe) {
  log::debug("probing ", probe.addresses.size(), " addresses of node 0 at port ", probe.port);
  probe_addresses(io_, probe, interfaces_, [this](std::vector<net::ProbeOutcome> outcomes) {
    if (client_) client_->send(proto::ProbeReport{std::move(outcomes)});
  });
}

void Agent::answer_facts_request() {
  if (!client_) return;
  proto::HostFacts facts = facts_.value_or(proto::HostFacts{});
  facts.wall_clock_us = wall_clock_us();
  client_->send(facts);
}

void Agent::answer_peer_test(const proto::PeerTest& test) {
  log::debug("peer test round ", test.round, ": ", test.targets.size(), " targets for ",
             test.duration_ms, " ms");
  run_peer_bench(io_, test, [this](proto::PeerTestReport report) {
    if (client_) client_->send(report);
  });
}

void Agent::answer_nccl_test(const proto::NcclTest& test) {
  if (!spec_.check) {
    log::warn("ignoring an NCCL test: this agent runs a job");
    return;
  }
  log::debug(test.unique_id.empty()
                 ? "NCCL: creating the unique id"
                 : "NCCL: all-reduce test as ranks " + std::to_string(test.first_rank) + ".." +
                       std::to_string(test.first_rank + test.gpus - 1) + " of " +
                       std::to_string(test.nranks));
  run_nccl_allreduce(io_, test, [this](proto::NcclReport report) {
    if (client_) client_->send(report);
  });
}

// Actions may raise further events (a round whose ranks all fail to start ends
// at once); the machine has moved on before any action runs, so that is safe.
void Agent::handle(const AgentEvent& event) {
  for (const auto& action : machine_->on(event)) apply(action);
}

void Agent::apply(const AgentAction& action) {
  using namespace agent_action;
  std::visit(
      Overloaded{
          [this](const StartRound& a) { start_round(a.assign); },
          [this](const TerminateRanks& a) {
            log::debug("stopping ranks: ", a.why);
            supervisor_.stop(std::chrono::seconds(a.grace_s));
          },
          [this](const KillAfter& a) { supervisor_.kill_after(std::chrono::seconds(a.grace_s)); },
          [this](const SweepLeftovers&) {
            supervisor_.sweep();
            // A rank's engine client killed after its grace leaves its container running.
            if (containers_) sweep_containers(*containers_);
          },
          [this](const SendAgentDone& a) {
            auto report = [this, round = a.round] {
              // The next round's MASTER_PORT, if this becomes node 0: held by
              // a probe listener, as at the start, so that an elastic job can
              // probe this host as its new node 0 (launcher/job/job_policy.h).
              if (!probe_listener_ && !spec_.check) probe_listener_.emplace(io_, 0);
              const int port = probe_listener_ && probe_listener_->port() != 0
                                   ? probe_listener_->port()
                                   : find_free_port();
              if (client_) client_->send(proto::AgentDone{round, port});
            };
            // The event files' last bytes and the last checkpoint reach the
            // coordinator before the round ends.
            flush_senders(report);
          },
          [this](const AnnounceStop& a) {
            if (spec_.echo) console().note(a.reason);
          },
          [this](const DropCoordinator&) {
            client_.reset();
            // Nobody is left to hold output back for.
            supervisor_.resume_output();
          },
          [](const LogWarning& a) { log::warn(a.text); },
          [](const LogError& a) { log::error(a.text); },
          [this](const Finish& a) { finish(a.exit_code); },
      },
      action);
}

void Agent::start_round(const proto::Assign& assign) {
  // Rank 0's TCPStore binds MASTER_PORT, which is this listener's port on node 0.
  if (probe_listener_) {
    probe_listener_->close();
    probe_listener_.reset();
  }
  std::vector<RankLaunch> launches;
  for (int local = 0; local < nproc_; ++local)
    launches.push_back({assign.rank_offset + local, rank_request(assign, local)});
  if (!launches.empty() && assign.round == 0) {
    const std::string warning =
        socket_ifname_override(launches.front().request.env, rank_interface(assign, spec_));
    if (!warning.empty()) log::warn(spec_.host_name, ": ", warning);
  }
  supervisor_.start(launches);
  pulse_.start();  // from here the guardian ends the ranks if this loop stops
  if (!tensorboard_ && !spec_.tensorboard_dir.empty() && assign.rank_offset == 0) {
    tensorboard_ = std::make_unique<DirectorySender>(
        io_, in_workdir(spec_, spec_.tensorboard_dir), DirectoryFollower::Options{},
        DirectorySender::Pace{}, "--tensorboard-dir", [this] { return client_.get(); });
    tensorboard_->start();
  }
  if (!spec_.checkpoint_dir.empty() && assign.rank_offset == 0) checkpoint_sender().start();
}

std::string Agent::ranks_directory() const {
  return spec_.workdir.empty() ? current_directory() : spec_.workdir;
}

bool Agent::prepare_containers() {
  const bool from_file = !spec_.container.image_file.empty();
  if ((spec_.container.image.empty() && !from_file) || spec_.check) return true;
  // In-process (manual mode) no guardian gave the agent its token.
  if (spec_.container.agent_token.empty())
    spec_.container.agent_token = auth::to_hex(auth::random_bytes(8));
  auto prepared = prepare_container_host(spec_.container);
  if (!prepared) {
    log::error(spec_.host_name, ": ",
               from_file ? "--image-file" : "--image " + spec_.container.image, ": ",
               prepared.error());
    return false;
  }
  containers_ = std::move(*prepared);
  if (spec_.container.engine == "auto" && !from_file)
    log::info(spec_.host_name, ": ranks run in containers of ", spec_.container.image, " (",
              containers_->version, ")");
  return true;
}

SpawnRequest Agent::rank_request(const proto::Assign& assign, int local) {
  auto argv = rank_argv(spec_.argv, spec_.pass_local_rank, std::to_string(local));
  auto env = rank_environment(assign, local, spec_, inherited_env_);
  if (!containers_) {
    if (stack_hook_) {
      // Its sitecustomize first: it runs the one it hides (rank_stacks.h).
      const auto path = env.find("PYTHONPATH");
      env["PYTHONPATH"] = stack_hook_->python_path +
                          (path != env.end() && !path->second.empty() ? ":" + path->second : "");
      env["DLAUNCH_STACKS_DIR"] = stack_hook_->directory;
      // torch's @record writes a failing rank's exception there, as under
      // torchrun. A file the user named instead is left alone.
      if (!env.contains("TORCHELASTIC_ERROR_FILE")) {
        const int rank = assign.rank_offset + local;
        const std::string file =
            stack_hook_->directory + "/error-" + std::to_string(rank) + ".json";
        ::unlink(file.c_str());  // a previous round's
        env["TORCHELASTIC_ERROR_FILE"] = file;
        error_files_[rank] = file;
      }
    }
    // The job's name comes with its first assignment.
    if (flight_dir_.empty()) flight_dir_ = flight_recorder_dir(assign.job);
    if (!flight_dir_.empty())
      flight_paths_[assign.rank_offset + local] = add_flight_recorder_environment(env, flight_dir_);
    return SpawnRequest{std::move(argv), std::move(env), spec_.workdir};
  }
  ContainerRank rank;
  rank.engine = containers_->engine;
  rank.executable = containers_->executable;
  rank.image = spec_.container.image;
  rank.job = assign.job;
  rank.agent_token = containers_->agent_token;
  rank.round = assign.round;
  rank.rank = assign.rank_offset + local;
  rank.workdir = ranks_directory();
  rank.mounts = spec_.container.mounts;
  rank.shm_size = spec_.container.shm_size;
  rank.gpus = gpus_ > 0;
  rank.uid = ::geteuid();
  rank.gid = ::getegid();
  rank.argv = std::move(argv);
  const auto names = container_variables(env, inherited_env_, spec_.env);
  auto command = container_command(rank, env, names);
  return SpawnRequest{std::move(command.argv), std::move(command.env), spec_.workdir};
}

void Agent::on_line(int rank, proto::Stream stream, std::string_view line, proto::LineEnd end) {
  last_line_[rank] = std::chrono::steady_clock::now();
  if (client_) {
    client_->send_log_line(rank, stream, line, end);
    if (client_->output_full()) supervisor_.pause_output();
  }
  if (spec_.echo) {
    std::FILE* f = stream == proto::Stream::err ? stderr : stdout;
    std::fprintf(f, "[%d] ", rank);
    std::fwrite(line.data(), 1, line.size(), f);
    std::fputc('\n', f);
    std::fflush(f);
  }
}

void Agent::finish(int code) {
  log::debug("agent finishing with exit code ", code);
  const bool ordered = machine_ && machine_->stopped_by_coordinator();
  exit_code_ = spec_.slurm_task && ordered ? 0 : code;
  if (client_) client_->close("agent finished");
  asio::error_code ignored;
  child_signals_.cancel(ignored);
  stop_signals_.cancel(ignored);
  supervisor_.cancel_timers();
  if (tensorboard_) tensorboard_->stop();
  if (checkpoint_) checkpoint_->stop();
  if (stdin_) stdin_->cancel(ignored);
  sync_wait_timer_.cancel();
  if (stack_hook_) remove_python_stack_hook(*stack_hook_);
  stack_hook_.reset();
  // A job that ends before its ranks were assigned leaves no marker behind.
  if (sync_owner_ && sync_markers_) remove_sync_markers(*sync_markers_);
  pulse_.stop();
  drain_and_stop(std::chrono::steady_clock::now() + std::chrono::seconds(3));
}

void Agent::drain_and_stop(std::chrono::steady_clock::time_point deadline) {
  // Pending writes (the last log lines, AgentDone) get until `deadline` to flush.
  if (client_ && client_->connected() && std::chrono::steady_clock::now() < deadline) {
    drain_timer_.expires_after(std::chrono::milliseconds(5));
    drain_timer_.async_wait(
        [this, deadline](const asio::error_code&) { drain_and_stop(deadline); });
    return;
  }
  io_.stop();
}

int run_agent(LaunchSpec spec, int stdin_fd, int pulse_fd) {
  asio::io_context io;
  Agent agent(io, std::move(spec), stdin_fd, pulse_fd);
  agent.start();
  io.run();
  return agent.exit_code();
}

}  // namespace dlaunch
