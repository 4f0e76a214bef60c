// The coordinator is a job's driver on the one runner (fleet/fleet_runner.h,
// which also runs `dlaunch check`): it gives JobPolicy the run's events, says
// what each agent's launch spec is, prints and stores every rank's output,
// keeps the job's record, mirrors TensorBoard files and checkpoints, streams
// --sync, watches for hangs, and carries out the policy's job-only actions
// (notes, rounds, syncs, checkpoint carries). What happens to the job
// (failures, restarts, interrupts, the exit code) is decided by the policy
// alone.
#pragma once

#include <asio.hpp>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "launcher/fleet/fleet_runner.h"
#include "launcher/hang/hang_watch.h"
#include "launcher/job/checkpoint_relay.h"
#include "launcher/job/job_policy.h"
#include "launcher/job/job_recorder.h"
#include "launcher/output/log_sink.h"
#include "launcher/record/job_record.h"
#include "launcher/sync/sync_manifest.h"
#include "launcher/sync/sync_streams.h"
#include "launcher/transport/transport.h"
#include "transfer/file_mirror.h"

namespace dlaunch {

class Coordinator : private FleetRunner::Driver {
 public:
  struct Settings : FleetRunner::Settings {
    std::string job_dir;  // where the record is kept; empty: none
    JobInfo record;       // the record as claimed (PENDING)
    // --sync: the directory's manifest, built before the job starts.
    std::shared_ptr<const SyncManifest> sync = {};
    // --image-file: the one file for every host's image cache.
    std::shared_ptr<const SyncManifest> image = {};
  };

  // `transports` must outlive the coordinator (the agents' handles point into them).
  Coordinator(asio::io_context& io, Settings settings, AgentTransports& transports, LogSink& sink);
  ~Coordinator() override;

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
  void on_signal(int signal) override;

  const JobPolicy& policy() const { return policy_; }
  const PolicyTimers& timers() const { return runner_.timers(); }

 private:
  // The run's events (FleetRunner::Driver).
  void on_join(ConnId conn, const proto::Join& join) override;
  void on_message(ConnId conn, proto::Message&& message) override;
  void on_connection_closed(ConnId conn, const std::string& reason) override;
  void on_timer(std::size_t which) override;
  LaunchSpec launch_spec(const PlannedNode& planned, const LaunchContext& context) override;
  std::string node_label(int node) const override;
  void on_agent_unreachable(int node, std::string what) override;
  void on_agent_exited(int node, int exit_code, const std::string& error,
                       const AgentStderr& diagnostics) override;
  void on_listening() override;
  void on_finish() override;

  void flush_logs_periodically();
  void on_log_line(ConnId conn, const proto::LogLine& line);
  void on_file_chunk(ConnId conn, const proto::FileChunk& chunk);
  void watch_suspend();
  void make_hang_watch();

  void apply(const JobActions& actions);
  void perform(const job_action::Note& a);
  void perform(const job_action::MarkRound& a);
  void perform(const job_action::StartSync& a);
  void perform(const job_action::CarryCheckpoint& a);
  // Messages to a connection held behind a checkpoint carry go out after it.
  void release(ConnId conn);

  asio::io_context& io_;
  Settings s_;
  LogSink& sink_;
  JobPolicy policy_;
  JobRecorder recorder_;
  std::optional<FileMirror> tensorboard_;  // --tensorboard-dir, into <job dir>/tensorboard
  FleetRunner runner_;
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
