// How the coordinator starts an agent on a host. The local transport forks and
// execs dlaunch-agent; the SSH transport connects with libssh2, uploads the agent
// if needed and starts it over an exec channel. Both write the launch spec to the
// agent's stdin and keep stdin open: closing it tells the agent to stop.
//
// Threading: start() returns at once. A transport may work in its own threads,
// but it delivers every AgentEvents callback through asio::post on the io_context
// it was given, so the coordinator sees events on its own thread only.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "launcher/hosts/hosts_file.h"

namespace asio {
class io_context;
}

namespace dlaunch {

// In an agent's environment: the job it serves (AgentLaunch::job).
inline constexpr const char* kAgentJobVariable = "DLAUNCH_AGENT_JOB";

struct AgentLaunch {
  std::string agent_binary;  // path of dlaunch-agent on this machine
  // The job (or check) the agent serves: it starts with kAgentJobVariable set
  // to it, so that the agent and what it starts can be told apart from other
  // jobs' processes on the host (ranks carry DLAUNCH_JOB too).
  std::string job = {};
  // Builds the launch spec bytes once the transport knows the coordinator's
  // address as seen from the host (the local address of the SSH connection;
  // "127.0.0.1" for the local transport).
  std::function<std::string(const std::string& local_address)> make_stdin;
};

struct AgentEvents {
  // Bytes the agent wrote to stderr (its own diagnostics, not rank output).
  std::function<void(std::string_view)> on_stderr;
  // Called exactly once: the agent process is gone, or could never be started.
  // `exit_code` is the agent's exit status (128+N for signal N), -1 when it
  // never started; `error` then says why, naming the host and what to do.
  std::function<void(int exit_code, const std::string& error)> on_exit;
};

class AgentHandle {
 public:
  virtual ~AgentHandle() = default;
  // Closes the agent's stdin: it stops its ranks (SIGTERM, then SIGKILL after
  // its grace) and exits. Idempotent.
  virtual void close_stdin() = 0;
  // Last resort when the agent does not exit: kill it (local: SIGKILL; SSH:
  // close the channel and the session).
  virtual void kill() = 0;
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual std::unique_ptr<AgentHandle> start(const HostEntry& host, const AgentLaunch& launch,
                                             AgentEvents events) = 0;
};

// The transports a job starts its agents through: one for this machine, one for
// remote hosts, each made on first use (a job with no remote node never sets
// up SSH). The caller chooses them: the real ones in `dlaunch run`, fakes in
// tests.
class AgentTransports {
 public:
  using Factory = std::function<std::unique_ptr<Transport>()>;
  AgentTransports(Factory make_local, Factory make_remote)
      : make_local_(std::move(make_local)), make_remote_(std::move(make_remote)) {}

  Transport& for_node(bool local) {
    auto& transport = local ? local_ : remote_;
    if (!transport) transport = local ? make_local_() : make_remote_();
    return *transport;
  }

 private:
  Factory make_local_;
  Factory make_remote_;
  std::unique_ptr<Transport> local_;
  std::unique_ptr<Transport> remote_;
};

}  // namespace dlaunch
