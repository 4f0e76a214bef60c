#include "launcher/transport/local_transport.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <asio.hpp>
#include <csignal>
#include <cstring>
#include <map>

#include "common/posix.h"
#include "common/spawn.h"

namespace dlaunch {
namespace {

class LocalAgent;

// One SIGCHLD watcher for all local agents: waitpid on our own pids only, so
// that nothing else's children are reaped by mistake.
class ChildWatcher {
 public:
  explicit ChildWatcher(asio::io_context& io) : signals_(io, SIGCHLD) { arm(); }
  void watch(pid_t pid, std::function<void(int)> on_exit) {
    waiting_[pid] = std::move(on_exit);
    poll();  // it may already be gone
  }
  void poll() {
    for (auto it = waiting_.begin(); it != waiting_.end();) {
      int status = 0;
      if (::waitpid(it->first, &status, WNOHANG) == it->first) {
        auto callback = std::move(it->second);
        it = waiting_.erase(it);
        callback(shell_status(status));
      } else {
        ++it;
      }
    }
  }

 private:
  void arm() {
    signals_.async_wait([this](const asio::error_code& ec, int) {
      if (ec) return;
      poll();
      arm();
    });
  }
  asio::signal_set signals_;
  std::map<pid_t, std::function<void(int)>> waiting_;
};

class LocalAgent : public AgentHandle, public std::enable_shared_from_this<LocalAgent> {
 public:
  LocalAgent(asio::io_context& io, AgentEvents events)
      : stdin_(io), stderr_(io), events_(std::move(events)) {}

  void launch(ChildWatcher& watcher, const AgentLaunch& launch) {
    int in[2];
    if (::pipe2(in, O_CLOEXEC) != 0) {
      return fail(std::string("cannot create pipes: ") + std::strerror(errno));
    }
    int err[2];
    if (::pipe2(err, O_CLOEXEC) != 0) {
      const int why = errno;
      ::close(in[0]);
      ::close(in[1]);
      return fail(std::string("cannot create pipes: ") + std::strerror(why));
    }
    ForkedChild child;
    child.program = launch.agent_binary;
    child.argv = {launch.agent_binary};
    child.stdio = {in[0], -1, err[1]};
    child.exec_error_before = "cannot run dlaunch-agent: ";
    if (!launch.job.empty()) child.extra_env = {{kAgentJobVariable, launch.job}};
    const auto forked = fork_exec_child(child);
    if (!forked) {
      for (int fd : {in[0], in[1], err[0], err[1]}) ::close(fd);
      return fail("fork failed: " + forked.error());
    }
    const pid_t pid = *forked;
    pid_ = pid;
    ::close(in[0]);
    ::close(err[1]);
    stdin_.assign(in[1]);
    stderr_.assign(err[0]);
    spec_bytes_ = launch.make_stdin("127.0.0.1");
    asio::async_write(stdin_, asio::buffer(spec_bytes_),
                      [self = shared_from_this()](const asio::error_code&, std::size_t) {
                        self->spec_bytes_.clear();
                      });
    read_stderr();
    watcher.watch(pid, [self = shared_from_this()](int code) { self->exited(code); });
  }

  void close_stdin() override {
    asio::error_code ignored;
    stdin_.close(ignored);
  }

  // The agent's guardian and worker share a process group of their own: kill
  // both, so that a frozen worker cannot keep its ranks alive.
  void kill() override {
    if (pid_ > 0 && !gone_) {
      ::kill(-pid_, SIGKILL);
      ::kill(pid_, SIGKILL);
    }
  }

 private:
  void read_stderr() {
    stderr_.async_read_some(asio::buffer(buffer_),
                            [self = shared_from_this()](const asio::error_code& ec, std::size_t n) {
                              if (ec) {
                                self->stderr_open_ = false;
                                self->maybe_report();
                                return;
                              }
                              if (self->events_.on_stderr)
                                self->events_.on_stderr(std::string_view(self->buffer_.data(), n));
                              self->read_stderr();
                            });
  }

  void exited(int code) {
    gone_ = true;
    exit_code_ = code;
    close_stdin();
    maybe_report();
  }

  // Report the exit after the last stderr bytes, so the error that explains
  // it is printed first.
  void maybe_report() {
    if (!gone_ || stderr_open_ || reported_) return;
    reported_ = true;
    if (events_.on_exit) events_.on_exit(exit_code_, {});
  }

  void fail(const std::string& error) {
    reported_ = true;
    asio::post(stdin_.get_executor(), [self = shared_from_this(), error] {
      if (self->events_.on_exit) self->events_.on_exit(-1, "localhost: " + error);
    });
  }

  asio::posix::stream_descriptor stdin_;
  asio::posix::stream_descriptor stderr_;
  AgentEvents events_;
  std::string spec_bytes_;
  std::array<char, 4096> buffer_{};
  pid_t pid_ = -1;
  bool gone_ = false;
  bool stderr_open_ = true;
  bool reported_ = false;
  int exit_code_ = 0;
};

// The handle the coordinator holds; the agent object lives on while its
// asynchronous operations are pending.
class LocalHandle : public AgentHandle {
 public:
  explicit LocalHandle(std::shared_ptr<LocalAgent> agent) : agent_(std::move(agent)) {}
  void close_stdin() override { agent_->close_stdin(); }
  void kill() override { agent_->kill(); }

 private:
  std::shared_ptr<LocalAgent> agent_;
};

class LocalTransport : public Transport {
 public:
  explicit LocalTransport(asio::io_context& io) : io_(io), watcher_(io) {}

  std::unique_ptr<AgentHandle> start(const HostEntry&, const AgentLaunch& launch,
                                     AgentEvents events) override {
    auto agent = std::make_shared<LocalAgent>(io_, std::move(events));
    agent->launch(watcher_, launch);
    return std::make_unique<LocalHandle>(agent);
  }

 private:
  asio::io_context& io_;
  ChildWatcher watcher_;
};

}  // namespace

std::unique_ptr<Transport> make_local_transport(asio::io_context& io) {
  return std::make_unique<LocalTransport>(io);
}

}  // namespace dlaunch
