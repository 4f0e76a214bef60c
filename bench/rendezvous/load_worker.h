// One load process's share of the simulated agents and its event loop: the
// C++ twin of rdzv_load.py's Worker, state for state. Each agent goes
//
//   Hello -> Challenge -> Join(proof) -> Welcome (its proof checked)
//   -> Probe -> ProbeReport -> Assign -> RankExit per rank -> AgentDone -> Stop -> close
//
// over its own non-blocking socket. A connection that fails or closes before
// Welcome is tried again with dlaunch-agent's backoff (50 ms doubling up to
// 2 s) until the deadline; a joined agent sends a Heartbeat when it has sent
// nothing for 4 s.
#pragma once

#include <netinet/in.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bench/rendezvous/load_loop.h"
#include "bench/rendezvous/load_options.h"
#include "bench/rendezvous/load_prober.h"
#include "bench/rendezvous/load_summary.h"
#include "bench/rendezvous/py_random.h"
#include "protocol/frame.h"
#include "protocol/messages.h"

namespace dlaunch::load {

class Worker {
 public:
  Worker(const Options& options, std::string secret, std::vector<int> nodes);
  Summary run();

 private:
  static constexpr unsigned kAgentKind = 0;  // token kind of the agents' sockets and timers
  enum class State { waiting, connecting, challenge, welcome, joined, done };

  struct Agent {
    int node = 0;
    int fd = -1;
    // Bumped per socket: its events carry it (with edge triggering it is
    // registered once), and those of a closed one are stale.
    std::uint32_t generation = 0;
    State state = State::waiting;
    FrameDecoder frames{kMaxFrame};
    std::string out;  // what the socket did not take yet
    std::string nonce;
    std::string server_nonce;
    double backoff = 0;
    std::int64_t attempts = 0;
    double last_send = 0;
    int probes = 0;      // Probes being answered
    bool blind = false;  // --blind-node: reaches none of node 0's addresses
    std::optional<proto::Assign> assign;
    std::optional<proto::Stop> stop;
    const char* outcome = nullptr;
  };

  Token token(std::uint32_t i) const { return make_token(kAgentKind, agents_[i].generation, i); }

  void connect(std::uint32_t i);
  void retry(std::uint32_t i, const std::string& why);
  void drop_socket(Agent& a);
  void finish(std::uint32_t i, const char* outcome, const std::string& error = "");
  void send(std::uint32_t i, std::string data);
  void on_connected(std::uint32_t i, std::uint32_t events);
  void closed(std::uint32_t i, const std::string& why);
  void on_readable(std::uint32_t i);
  void on_frame(std::uint32_t i, const Frame& frame);
  void on_joined_frame(std::uint32_t i, const Frame& frame, double now);
  void on_probe_done(std::uint32_t i, std::vector<net::ProbeOutcome> outcomes);
  void answer_blind(std::uint32_t i, const proto::Probe& probe);
  void report_exits(std::uint32_t i);
  void close_all();
  void on_socket_event(Token token, std::uint32_t events);
  void heartbeats(double now);
  Summary summary() const;

  const Options& o_;
  const std::string secret_;
  sockaddr_in server_{};
  bool server_resolved_ = false;
  Loop loop_;
  std::vector<Agent> agents_;
  Summary stats_;  // the counters and the timeline; the rest is read off the agents at the end
  Prober prober_;
  std::int64_t active_ = 0;
  double deadline_ = 0;
  bool closing_all_ = false;
  bool close_all_pending_ = false;
  std::int64_t assigned_ = 0;
  bool holds_failure_ = false;
  PyRandom rng_;
  std::vector<char> receive_buffer_;
  std::int64_t pid_ = 0;  // for the Joins
  std::string heartbeat_frame_;
};

}  // namespace dlaunch::load
