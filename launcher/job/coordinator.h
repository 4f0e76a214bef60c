// The coordinator wires a job's I/O to its JobPolicy: it runs the rendezvous
// server, starts one agent per planned node through the transports its caller
// gives it, prints and stores every rank's output, and turns the policy's
// actions into messages, signals to agents, timers and lines on the console.
// What happens to the job (failures, restarts, interrupts, the exit code) is
// decided by the policy alone.
#pragma once

#include <asio.hpp>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "launcher/config/options.h"
#include "launcher/fleet/agent_fleet.h"
#include "launcher/hang/hang_watch.h"
#include "launcher/job/checkpoint_relay.h"
#include "launcher/job/job_policy.h"
#include "launcher/job/job_recorder.h"
#include "launcher/output/log_sink.h"
#include "launcher/plan/plan.h"
#include "launcher/record/job_record.h"
#include "launcher/sync/sync_manifest.h"
#include "launcher/sync/sync_streams.h"
#include "launcher/transport/transport.h"
#include "protocol/file_mirror.h"

namespace dlaunch {

class Coordinator {
 public:
  struct Settings {
    Plan plan;
    Options options;
    std::string secret;
    std::string agent_binary;
    std::string job_dir;  // where the record is kept; empty: none
    JobInfo record;       // the record as claimed (PENDING)
    // --sync: the directory's manifest, built before the job starts.
    std::shared_ptr<const SyncManifest> sync = {};
    // --image-file: the one file for every host's image cache.
    std::shared_ptr<const SyncManifest> image = {};
    // More agents than this process may hold connections (descriptor_budget):
    // this many relay processes hold them, up to sessions_each each. Without
    // relays, the connections this process holds at most (0: no limit).
    std::size_t rendezvous_relays = 0;
    std::size_t sessions_each = 0;
    AgentFleet::ServiceFactory service = {};  // tests: instead of listening
  };

  // `transports` must outlive the coordinator (the agents' handles point into them).
  Coordinator(asio::io_context& io, Settings settings, AgentTransports& transports, LogSink& sink);
  ~Coordinator();

  // Runs the job to the end on the io_context; returns the exit code.
  int run();
  const JobResult& result() const { return result_; }

  // run() in its three steps, for a test that drives the io_context itself
  // (tests/unit/launcher/job/fake_job.h). start(): listens, starts every
  // agent and the policy; false when it cannot listen (result() says why).
  bool start();
  // Once the io_context has run out or the policy finished: ends what is
  // left, records the result and returns the exit code.
  int finish();
  // SIGINT and SIGTERM come here.
  void on_signal(int signal);

  const JobPolicy& policy() const { return policy_; }
  const PolicyTimers<JobTimer, kJobTimers>& timers() const { return timers_; }

 private:
  Result<void> start_server();
  void flush_logs_periodically();
  void start_agent(const PlannedNode& planned);
  void on_message(ConnId conn, proto::Message&& message);
  void on_log_line(ConnId conn, const proto::LogLine& line);
  void on_file_chunk(ConnId conn, const proto::FileChunk& chunk);
  void watch_suspend();
  void make_hang_watch();

  void apply(const JobActions& actions);
  void perform(const job_action::ArmTimer& a);
  void perform(const job_action::CancelTimer& a);
  void perform(const job_action::Note& a);
  void perform(const job_action::MarkRound& a);
  void perform(const job_action::StartSync& a);
  void perform(const job_action::CarryCheckpoint& a);
  // Messages to a connection held behind a checkpoint carry go out after it.
  void release(ConnId conn);
  void perform(const job_action::Finish& a);

  asio::io_context& io_;
  Settings s_;
  LogSink& sink_;
  JobPolicy policy_;
  JobRecorder recorder_;
  std::optional<FileMirror> tensorboard_;  // --tensorboard-dir, into <job dir>/tensorboard
  AgentFleet fleet_;
  PolicyTimers<JobTimer, kJobTimers> timers_;
  std::string workdir_;
  JobResult result_;
  asio::signal_set suspend_signals_;            // Ctrl-Z: answered, never obeyed
  bool reading_paused_ = false;                 // --no-skip and the terminal is behind
  std::optional<SyncStreams> syncs_;            // --sync, once the rendezvous listens
  std::optional<CheckpointRelay> checkpoints_;  // --checkpoint-dir, into <job dir>/checkpoint
  std::map<ConnId, JobActions> held_;           // sends waiting for a checkpoint carry
  std::unique_ptr<HangWatch> hang_;             // `dlaunch stacks`, stalls, --hang-timeout
  asio::steady_timer flush_timer_;
  unsigned flushes_ = 0;  // every kFlushesPerHeapReturn, freed heap memory goes back
};

}  // namespace dlaunch
