// The load's answer to a Probe: a real TCP connect to each of node 0's
// candidate addresses at its probe port, as dlaunch-agent makes them
// (agent/prober.h): non-blocking, every address of a Probe at once, a fresh
// SYN when a connect is still pending after 200 ms (then 400, 800 ms ...),
// and an address counts as reached only once node 0's probe listener has
// sent its one byte. As in rdzv_load.py, an address gets at most 2 s (or the
// Probe's timeout if shorter), and there is no settle rule: with thousands of
// simulated agents the cost to measure is node 0's, not the wait.
//
// Unlike rdzv_load.py, whose blocking connects probe one address of one
// agent at a time per load process, probes of many agents are in flight at
// once, as they are from real nodes: node 0's probe listener and the
// coordinator's probe window see the load they would see. Each connect's time
// (probe_connect_ms) then includes the wait in this loop and in node 0's
// accept queue, so it is far larger than the Python load's.
//
// Many probes run at once on the worker's loop; their connections are
// sockets of that loop, told apart from the agents' by the token's kind.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <functional>
#include <vector>

#include "bench/rendezvous/load_loop.h"
#include "bench/rendezvous/load_summary.h"
#include "net/choice.h"
#include "protocol/messages.h"

namespace dlaunch::load {

class Prober {
 public:
  static constexpr unsigned kKind = 1;  // token kind of the probes' sockets and timers
  using Done = std::function<void(std::uint32_t owner, std::vector<net::ProbeOutcome>)>;

  // `stats` takes probe_connects, probe_connect_ms, probe_connects_over_150ms
  // and probe_resends, as rdzv_load.py counts them.
  Prober(Loop& loop, Counts& stats, Done done)
      : loop_(loop), stats_(stats), done_(std::move(done)) {}
  ~Prober();
  Prober(const Prober&) = delete;
  Prober& operator=(const Prober&) = delete;

  // `done` runs once for this probe (maybe before start returns) with one
  // outcome per address, unless the owner's probes are cancelled first. The
  // connections come from node `node`'s source address (source_address.h).
  void start(std::uint32_t owner, int node, const proto::Probe& probe);
  void cancel(std::uint32_t owner);

  void on_event(Token token, std::uint32_t events);
  void on_timer(Token token);

 private:
  enum class Step { connecting, answering };
  struct Attempt {
    bool used = false;
    // Bumped per socket (its events carry it: with edge triggering it is
    // registered once) and per timer set: those of an earlier one are stale.
    std::uint32_t generation = 0;
    std::uint32_t timer_generation = 0;
    int fd = -1;
    std::uint32_t run = 0;
    std::size_t index = 0;  // in the Probe's addresses
    sockaddr_storage address{};
    socklen_t address_len = 0;
    Step step = Step::connecting;
    double started = 0;
    double deadline = 0;
    double wait = 0;  // until the next fresh SYN
  };
  struct Run {
    bool used = false;
    std::uint32_t owner = 0;
    int node = 0;
    std::vector<net::ProbeOutcome> outcomes;
    std::size_t pending = 0;
    std::vector<std::uint32_t> attempts;
  };

  Token token(std::uint32_t i) const { return make_token(kKind, attempts_[i].generation, i); }
  Token timer_token(std::uint32_t i) {
    return make_token(kKind, ++attempts_[i].timer_generation, i);
  }
  Attempt* live(Token token, bool timer);
  void connect(std::uint32_t i);
  void await_answer(std::uint32_t i, bool readable);
  void read_answer(std::uint32_t i);
  void finish(std::uint32_t i, bool reached, std::string error);
  void release(std::uint32_t i);

  Loop& loop_;
  Counts& stats_;
  Done done_;
  std::vector<Attempt> attempts_;
  std::vector<std::uint32_t> free_attempts_;
  std::vector<Run> runs_;
  std::vector<std::uint32_t> free_runs_;
  std::size_t active_runs_ = 0;
};

}  // namespace dlaunch::load
