// dlaunch-agent's logic: join the rendezvous, spawn this node's ranks with their
// environment, forward their output line by line and their exits, stop them on
// request, and stop them by itself when it loses the coordinator. It runs on
// one asio io_context; the caller runs the context and reads exit_code().
#pragma once

#include <sys/types.h>

#include <asio.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/line_splitter.h"
#include "protocol/launch_spec.h"
#include "protocol/rank_env.h"
#include "rendezvous/client.h"

namespace dlaunch {

class Agent {
 public:
  // `stdin_fd`: the coordinator's pipe or SSH channel, watched for end-of-file;
  // -1 when there is none (manual mode runs the agent inside dlaunch).
  Agent(asio::io_context& io, LaunchSpec spec, int stdin_fd);
  ~Agent();

  void start();
  int exit_code() const { return exit_code_; }

 private:
  struct Rank;

  void on_message(proto::Message&& message);
  void start_round(const proto::Assign& assign);
  void read_stream(Rank& rank, bool err);
  void on_line(const Rank& rank, proto::Stream stream, std::string_view line);
  void reap_children();
  void maybe_report_exit(Rank& rank);
  void round_over();
  void sweep_leftovers(int step);
  void drain_and_stop(std::chrono::steady_clock::time_point deadline);
  void terminate_ranks(const std::string& why);
  void kill_everything();
  void lose_coordinator(const std::string& why);
  void finish(int code);
  void watch_stdin();
  void watch_signals();
  bool ranks_running() const;

  asio::io_context& io_;
  LaunchSpec spec_;
  EnvMap inherited_env_;
  int nproc_ = 1;
  int gpus_ = 0;
  std::unique_ptr<RendezvousClient> client_;
  std::optional<asio::posix::stream_descriptor> stdin_;
  std::array<char, 256> stdin_buffer_{};
  asio::signal_set child_signals_;
  asio::signal_set stop_signals_;
  asio::steady_timer grace_timer_;
  asio::steady_timer sweep_timer_;
  std::vector<std::unique_ptr<Rank>> ranks_;
  proto::Assign assign_;
  bool round_active_ = false;
  bool stopping_ = false;    // ranks are being terminated
  bool final_stop_ = false;  // no further round will come
  bool lost_coordinator_ = false;
  bool finished_ = false;
  int exit_code_ = 0;
  int final_code_ = 0;
};

// Runs an agent to completion on its own io_context; returns its exit code.
int run_agent(LaunchSpec spec, int stdin_fd);

}  // namespace dlaunch
