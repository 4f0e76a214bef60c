// A transport for tests: it starts nothing. It records every agent it was
// asked to start and what was done to it (stdin closed, killed), and lets the
// test decide when and how each agent exits. Events are delivered at once, on
// the caller's thread, when the test calls exit() or write_stderr().
#pragma once

#include <cstddef>
#include <deque>
#include <memory>
#include <string>
#include <string_view>

#include "launcher/transport/transport.h"

namespace dlaunch {

class FakeTransport : public Transport {
 public:
  // A kill() ends the agent at once, reported as a real transport reports a
  // killed local agent (exit code 137), unless `kills_land` is false: a test
  // that plays an agent whose end comes later (or never) says so.
  explicit FakeTransport(bool kills_land = true) : kills_land_(kills_land) {}

  struct Agent {
    HostEntry host;
    AgentLaunch launch;
    AgentEvents events;
    // Its launch spec, built at start as the local transport builds it (over
    // 127.0.0.1): a test of many nodes builds every one, as a real run does.
    std::string spec_bytes;
    bool stdin_closed = false;
    int kills = 0;
    bool exited = false;
  };

  std::unique_ptr<AgentHandle> start(const HostEntry& host, const AgentLaunch& launch,
                                     AgentEvents events) override;

  // Agents in the order they were started.
  std::size_t started() const { return agents_.size(); }
  const Agent& agent(std::size_t index) const { return agents_.at(index); }
  // What the agent would read on its stdin, as if reached over `local_address`.
  std::string stdin_of(std::size_t index, const std::string& local_address = "127.0.0.1") const;

  bool kills_land() const { return kills_land_; }
  Agent& agent_at(std::size_t index) { return agents_.at(index); }

  // The agent writes to its stderr.
  void write_stderr(std::size_t index, std::string_view bytes);
  // The agent's process exits (-1 and an error: it could never start). Like a
  // real transport, reports it once; later calls do nothing.
  void exit(std::size_t index, int exit_code, const std::string& error = "");

 private:
  bool kills_land_;
  std::deque<Agent> agents_;  // a deque: handles keep pointers into it
};

}  // namespace dlaunch
