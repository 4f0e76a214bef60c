// The coordinator: runs the rendezvous server, starts one agent per planned
// node through a transport, prints and stores every rank's output, and decides
// the job's fate: the first failure in time stops everyone (or starts the next
// restart round), and one exit code comes out at the end.
#pragma once

#include <asio.hpp>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "launcher/config/options.h"
#include "launcher/job/job_record.h"
#include "launcher/job/log_sink.h"
#include "launcher/plan/plan.h"
#include "launcher/transport/transport.h"
#include "rendezvous/server.h"
#include "rendezvous/state.h"

namespace dlaunch {

class Coordinator {
 public:
  struct Settings {
    Plan plan;
    Options options;
    std::string secret;
    std::string agent_binary;
  };

  Coordinator(asio::io_context& io, Settings settings, LogSink& sink);
  ~Coordinator();

  // Runs the job to the end on the io_context; returns the exit code.
  int run();
  const JobResult& result() const { return result_; }

 private:
  struct Node {
    PlannedNode plan;
    std::unique_ptr<AgentHandle> handle;  // null for nodes that start their own agent
    std::optional<ConnId> conn;
    bool agent_gone = false;  // its process exited (or could never start)
    bool conn_closed = false;
    std::string stderr_text;  // the agent's own diagnostics, for error messages
    std::string host_label;   // name used in prefixes and messages
  };
  enum class Phase { starting, running, restarting, stopping };

  void start_server();
  void flush_logs_periodically();
  void start_agents();
  void start_agent(Node& node);
  void on_join(ConnId conn, const proto::Join& join);
  void on_message(ConnId conn, proto::Message&& message);
  void on_close(ConnId conn, const std::string& reason);
  void on_agent_exit(Node& node, int code, const std::string& error);
  void on_rank_exit(ConnId conn, const proto::RankExit& exit);
  void send_all(const std::vector<Outbound>& out);
  void fail(int code, const std::string& what, int rank);
  void stop_job(int code, const std::string& reason);
  void begin_next_round();
  void check_finished();
  void watch_signals();
  void on_rendezvous_timeout();
  Node* node_of(ConnId conn);
  std::string rank_label(int rank);

  asio::io_context& io_;
  Settings s_;
  LogSink& sink_;
  std::unique_ptr<Transport> local_;
  std::unique_ptr<Transport> ssh_;
  std::unique_ptr<RendezvousServer> server_;
  std::optional<RendezvousState> state_;
  std::vector<Node> nodes_;  // indexed by node rank
  std::map<ConnId, int> node_of_conn_;
  Phase phase_ = Phase::starting;
  bool failed_this_round_ = false;
  int exit_code_ = 0;
  int interrupts_ = 0;
  bool finished_ = false;
  JobResult result_;
  asio::signal_set signals_;
  asio::steady_timer rdzv_timer_;
  asio::steady_timer stop_deadline_;
  asio::steady_timer restart_timer_;
  asio::steady_timer flush_timer_;
};

}  // namespace dlaunch
