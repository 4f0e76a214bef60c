// dlaunch-agent's logic: join the rendezvous, spawn this node's ranks with their
// environment, forward their output line by line and their exits, stop them on
// request, and stop them by itself when it loses the coordinator. The decisions
// are AgentStateMachine's and the ranks are RankSupervisor's; this class wires
// them to the rendezvous client, signals, timers and stdin on one asio
// io_context. The caller runs the context and reads exit_code().
// In check mode (LaunchSpec::check, `dlaunch check`) it starts no rank: it
// joins, answers FactsRequest, Probe and PeerTest, and exits on Stop.
#pragma once

#include <asio.hpp>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

#include "agent/agent_state.h"
#include "agent/container_host.h"
#include "agent/directory_sender.h"
#include "agent/git_checkout.h"
#include "agent/guardian.h"
#include "agent/probe_listener.h"
#include "agent/process_ops.h"
#include "agent/rank_stacks.h"
#include "agent/rank_supervisor.h"
#include "agent/sync_markers.h"
#include "agent/sync_receiver.h"
#include "protocol/launch_spec.h"
#include "protocol/rank_env.h"
#include "rendezvous/client.h"
#include "transfer/file_mirror.h"

namespace dlaunch {

class Agent {
 public:
  // `stdin_fd`: the coordinator's pipe or SSH channel, watched for end-of-file;
  // -1 when there is none (manual mode runs the agent inside dlaunch).
  // `pulse_fd`: the guardian's pipe (agent/guardian.h), pulsed while ranks run.
  Agent(asio::io_context& io, LaunchSpec spec, int stdin_fd, int pulse_fd = -1);
  ~Agent();

  void start();
  int exit_code() const { return exit_code_; }

 private:
  void handle(const AgentEvent& event);
  void apply(const AgentAction& action);
  void on_message(proto::Message&& message);
  void start_round(const proto::Assign& assign);
  void answer_probe(const proto::Probe& probe);
  void answer_facts_request();
  bool prepare_containers();
  // Where the ranks start, as a path: the settled workdir, else the agent's own.
  std::string ranks_directory() const;
  SpawnRequest rank_request(const proto::Assign& assign, int local);
  void answer_peer_test(const proto::PeerTest& test);
  void answer_nccl_test(const proto::NcclTest& test);
  // A rank's exit for the coordinator, with the exception torch's @record
  // left in its TORCHELASTIC_ERROR_FILE when it failed.
  void report_exit(proto::RankExit exit);
  // `dlaunch stacks`, a stalled job: every requested rank's stack, taken off
  // the event loop (tools take seconds), one report each, then the last.
  void answer_stacks(const proto::StacksRequest& request);
  void on_line(int rank, proto::Stream stream, std::string_view text, proto::LineEnd end);
  void finish(int code);
  void drain_and_stop(std::chrono::steady_clock::time_point deadline);
  void watch_stdin();
  void watch_signals();
  bool settle_workdir();
  void on_sync_offer(proto::SyncOffer&& offer);
  void on_sync_data(const proto::SyncData& data);
  void compare_sync();
  void wait_for_sync_owner();
  void end_sync();
  // --image-file: the cached file made runnable (loaded), then SyncDone.
  void ready_image(const std::string& file, proto::SyncDone done);
  void on_image_ready(const std::string& image, const proto::SyncDone& done);
  // --checkpoint-dir: a new node 0 receives the latest checkpoint from the
  // coordinator before its Assign.
  void on_checkpoint_chunk(const proto::FileChunk& chunk);
  DirectorySender& checkpoint_sender();
  // The senders' last files reach the coordinator, then `done` runs.
  void flush_senders(std::function<void()> done);

  asio::io_context& io_;
  LaunchSpec spec_;
  EnvMap inherited_env_;
  int nproc_ = 1;
  int gpus_ = 0;
  net::Interfaces interfaces_;
  std::optional<ContainerHost> containers_;    // --image: the engine ranks run in
  std::optional<CheckoutHold> checkout_hold_;  // --sync-git: this job's code, held
  std::optional<proto::HostFacts> facts_;      // check mode: collected before joining
  // Open from the start until the first round's ranks start: node 0's port
  // for probes and then for MASTER_PORT (see ProbeListener).
  std::optional<ProbeListener> probe_listener_;
  std::optional<AgentStateMachine> machine_;  // needs nproc, known once GPUs are counted
  SystemProcessOps process_ops_;
  RankSupervisor supervisor_;
  std::unique_ptr<RendezvousClient> client_;
  std::unique_ptr<DirectorySender> tensorboard_;  // rank 0's node with --tensorboard-dir
  std::unique_ptr<DirectorySender> checkpoint_;   // --checkpoint-dir, sending from rank 0's node
  std::optional<FileMirror> checkpoint_in_;       // --checkpoint-dir, from the coordinator
  // --image-file, then --sync: the transfer under way, until its SyncDone.
  std::unique_ptr<SyncReceiver> sync_;
  proto::SyncInto sync_into_ = proto::SyncInto::workdir;
  // The destination's markers (agent/sync_markers.h), claimed once the offer
  // is complete; `sync_owner_` removes them when the ranks are assigned.
  std::optional<SyncMarkers> sync_markers_;
  bool sync_owner_ = false;
  asio::steady_timer sync_wait_timer_;
  std::optional<asio::posix::stream_descriptor> stdin_;
  std::array<char, 256> stdin_buffer_{};
  asio::signal_set child_signals_;
  asio::signal_set stop_signals_;
  asio::steady_timer drain_timer_;
  WorkerPulse pulse_;
  // Python ranks dump their stacks here (rank_stacks.h); none in containers.
  std::optional<PythonStackHook> stack_hook_;
  std::unordered_map<int, std::chrono::steady_clock::time_point> last_line_;  // by rank
  std::unordered_map<int, std::string> error_files_;  // TORCHELASTIC_ERROR_FILE by rank
  std::string flight_dir_;  // flight_recorder_dir(job), once the job's ranks are assigned
  std::unordered_map<int, FlightRecorderPaths> flight_paths_;  // by rank
  int exit_code_ = 0;
};

// Runs an agent to completion on its own io_context; returns its exit code.
int run_agent(LaunchSpec spec, int stdin_fd, int pulse_fd);

}  // namespace dlaunch
