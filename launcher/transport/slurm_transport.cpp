#include "launcher/transport/slurm_transport.h"

#include <fcntl.h>
#include <netdb.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <asio.hpp>
#include <csignal>
#include <cstring>
#include <deque>
#include <optional>
#include <vector>

#include "common/log.h"
#include "common/posix.h"
#include "common/spawn.h"
#include "launcher/transport/srun_argv.h"
#include "launcher/transport/srun_output.h"

namespace dlaunch {

std::string local_address_towards(const std::string& host) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), "9", &hints, &found) != 0) return "";
  std::string address;
  for (addrinfo* ai = found; ai != nullptr && address.empty(); ai = ai->ai_next) {
    const int fd = ::socket(ai->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    sockaddr_storage local{};
    socklen_t length = sizeof local;
    char text[NI_MAXHOST] = {};
    if (::connect(fd, ai->ai_addr, ai->ai_addrlen) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length) == 0 &&
        ::getnameinfo(reinterpret_cast<sockaddr*>(&local), length, text, sizeof text, nullptr, 0,
                      NI_NUMERICHOST) == 0) {
      address = text;
    }
    ::close(fd);
  }
  ::freeaddrinfo(found);
  return address;
}

namespace {

// srun prints a task's failure as soon as it hears of it, which can be before
// the task's last stderr lines (they travel another way): the node's exit is
// reported this much later, so the lines that explain it come first.
constexpr auto kExitReportDelay = std::chrono::milliseconds(300);

class SlurmStep : public std::enable_shared_from_this<SlurmStep> {
 public:
  SlurmStep(asio::io_context& io, const SlurmOptions& options)
      : io_(io), options_(options), stdin_(io), output_(io), child_signal_(io, SIGCHLD) {}

  std::size_t add(const HostEntry& host, const AgentLaunch& launch, AgentEvents events) {
    members_.push_back(Member{host, launch, std::move(events)});
    return members_.size() - 1;
  }
  bool launched() const { return launched_; }

  void launch() {
    launched_ = true;
    demux_.emplace(static_cast<int>(members_.size()));
    SrunStep step;
    step.srun = options_.srun;
    step.job_name = options_.job_name;
    step.elastic = options_.elastic;
    step.agent_binary = members_.front().launch.agent_binary;
    for (const auto& m : members_) step.nodes.push_back(m.host.name);
    const std::vector<std::string> argv = srun_argv(step);
    log::debug("starting the agents with srun on ", srun_nodelist(step.nodes));

    // Every node's spec, pointed at the address this machine has towards it.
    const std::string fallback = this_host_name();
    for (auto& m : members_) {
      std::string address = local_address_towards(m.host.address);
      if (address.empty()) address = fallback;
      spec_bytes_ += m.launch.make_stdin(address);
    }

    int in[2];
    int out[2];
    if (::pipe2(in, O_CLOEXEC) != 0) return fail_all(std::string("pipe: ") + std::strerror(errno));
    if (::pipe2(out, O_CLOEXEC) != 0) {
      ::close(in[0]);
      ::close(in[1]);
      return fail_all(std::string("pipe: ") + std::strerror(errno));
    }
    ForkedChild child;
    child.program = argv[0];
    child.search_path = true;
    child.argv = argv;
    // A process group of its own (fork_exec_child): a terminal's Ctrl-C
    // reaches the coordinator only, which stops the job in order (srun would
    // kill it).
    child.stdio = {in[0], out[1], out[1]};
    child.exec_error_before = "cannot run " + argv[0] + ": ";
    child.exec_error_after = " (is Slurm's srun on PATH?)\n";
    // srun passes its environment on to the tasks (--export=ALL, its default).
    if (const auto& job = members_.front().launch.job; !job.empty())
      child.extra_env = {{kAgentJobVariable, job}};
    const auto forked = fork_exec_child(child);
    if (!forked) {
      for (int fd : {in[0], in[1], out[0], out[1]}) ::close(fd);
      return fail_all("fork: " + forked.error());
    }
    const pid_t pid = *forked;
    pid_ = pid;
    ::close(in[0]);
    ::close(out[1]);
    stdin_.assign(in[1]);
    output_.assign(out[0]);
    asio::async_write(stdin_, asio::buffer(spec_bytes_),
                      [self = shared_from_this()](const asio::error_code&, std::size_t) {
                        self->spec_bytes_.clear();
                      });
    read_output();
    watch_child();
    apply_requests();  // the coordinator may have asked already
  }

  void request_close_stdin(std::size_t member) {
    members_[member].wants_eof = true;
    apply_requests();
  }

  void request_kill(std::size_t member) {
    members_[member].wants_kill = true;
    apply_requests();
  }

 private:
  struct Member {
    HostEntry host;
    AgentLaunch launch;
    AgentEvents events;
    bool wants_eof = false;
    bool wants_kill = false;
    bool reported = false;
    std::unique_ptr<asio::steady_timer> report_timer = {};
  };

  // A request is the step's once every node still running has made it.
  void apply_requests() {
    if (!launched_ || pid_ < 0) return;
    bool all_eof = true;
    bool all_kill = true;
    bool running = false;
    for (const auto& m : members_) {
      if (m.reported) continue;
      running = true;
      all_eof = all_eof && (m.wants_eof || m.wants_kill);
      all_kill = all_kill && m.wants_kill;
    }
    if (all_eof) close_stdin();
    // With every agent reported gone, srun is about to exit by itself.
    if (running && all_kill && !gone_ && !killed_) {
      killed_ = true;
      ::kill(pid_, SIGTERM);  // srun sends SIGKILL to every agent and exits
    }
  }

  void close_stdin() {
    asio::error_code ignored;
    stdin_.close(ignored);
  }

  void read_output() {
    output_.async_read_some(asio::buffer(buffer_), [self = shared_from_this()](
                                                       const asio::error_code& ec, std::size_t n) {
      if (ec) {
        self->handle_lines(self->demux_->finish());
        self->output_open_ = false;
        self->maybe_finish();
        return;
      }
      self->handle_lines(self->demux_->feed(std::string_view(self->buffer_.data(), n)));
      self->read_output();
    });
  }

  void handle_lines(const std::vector<SrunLine>& lines) {
    for (const auto& line : lines) {
      if (line.task >= 0) {
        auto& m = members_[static_cast<std::size_t>(line.task)];
        if (m.events.on_stderr) m.events.on_stderr(line.text);
        continue;
      }
      if (auto exit = parse_task_exit(line.text)) {
        task_exits_.push_back(*exit);
        report_later(*exit);
        continue;
      }
      std::string text = line.text;
      while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
      if (text.empty()) continue;
      srun_tail_.push_back(text);
      if (srun_tail_.size() > 3) srun_tail_.pop_front();
      if (text.find("error") != std::string::npos) {
        log::warn(text);
      } else {
        log::info(text);
      }
    }
  }

  void report_later(const TaskExit& exit) {
    const auto index = node_of(node_names(), exit);
    if (!index) return;
    auto& m = members_[*index];
    if (m.reported || m.report_timer) return;
    m.report_timer = std::make_unique<asio::steady_timer>(io_, kExitReportDelay);
    m.report_timer->async_wait(
        [self = shared_from_this(), i = *index, code = exit.exit_code](const asio::error_code& ec) {
          if (!ec) self->report(i, code, {});
        });
  }

  std::vector<std::string> node_names() const {
    std::vector<std::string> names;
    for (const auto& m : members_) names.push_back(m.host.name);
    return names;
  }

  void watch_child() {
    child_signal_.async_wait([self = shared_from_this()](const asio::error_code& ec, int) {
      if (ec) return;
      if (!self->poll_child()) self->watch_child();
    });
    poll_child();  // it may be gone already
  }

  bool poll_child() {
    if (gone_) return true;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) != pid_) return false;
    gone_ = true;
    srun_code_ = shell_status(status);
    asio::error_code ignored;
    child_signal_.cancel(ignored);
    close_stdin();
    maybe_finish();
    return true;
  }

  // srun and its output are both gone: every node not reported yet is now.
  void maybe_finish() {
    if (!gone_ || output_open_ || finished_) return;
    finished_ = true;
    const auto codes = agent_exit_codes(node_names(), task_exits_, srun_code_);
    std::string error;
    if (task_exits_.empty() && srun_code_ != 0) {
      error = "srun exited with code " + std::to_string(srun_code_);
      if (!srun_tail_.empty()) error += ": " + srun_tail_.back();
    }
    for (std::size_t i = 0; i < members_.size(); ++i) {
      if (members_[i].report_timer) members_[i].report_timer->cancel();
      report(i, codes[i], error.empty() ? "" : members_[i].host.name + ": " + error);
    }
  }

  void report(std::size_t i, int code, const std::string& error) {
    auto& m = members_[i];
    if (m.reported) return;
    m.reported = true;
    if (m.events.on_exit) m.events.on_exit(code, error);
    apply_requests();
  }

  void fail_all(const std::string& why) {
    finished_ = true;
    asio::post(io_, [self = shared_from_this(), why] {
      for (std::size_t i = 0; i < self->members_.size(); ++i)
        self->report(i, -1, self->members_[i].host.name + ": cannot start srun: " + why);
    });
  }

  asio::io_context& io_;
  SlurmOptions options_;
  std::deque<Member> members_;
  asio::posix::stream_descriptor stdin_;
  asio::posix::stream_descriptor output_;
  asio::signal_set child_signal_;
  std::optional<SrunOutput> demux_;
  std::array<char, 8192> buffer_{};
  std::string spec_bytes_;
  std::vector<TaskExit> task_exits_;
  std::deque<std::string> srun_tail_;
  pid_t pid_ = -1;
  int srun_code_ = 0;
  bool launched_ = false;
  bool gone_ = false;
  bool killed_ = false;
  bool output_open_ = true;
  bool finished_ = false;
};

class SlurmHandle : public AgentHandle {
 public:
  SlurmHandle(std::shared_ptr<SlurmStep> step, std::size_t member)
      : step_(std::move(step)), member_(member) {}
  void close_stdin() override { step_->request_close_stdin(member_); }
  void kill() override { step_->request_kill(member_); }

 private:
  std::shared_ptr<SlurmStep> step_;
  std::size_t member_;
};

class SlurmTransport : public Transport {
 public:
  SlurmTransport(asio::io_context& io, SlurmOptions options)
      : io_(io), options_(std::move(options)) {}

  std::unique_ptr<AgentHandle> start(const HostEntry& host, const AgentLaunch& launch,
                                     AgentEvents events) override {
    if (!step_ || step_->launched()) {
      step_ = std::make_shared<SlurmStep>(io_, options_);
      asio::post(io_, [step = step_] { step->launch(); });
    }
    const std::size_t member = step_->add(host, launch, std::move(events));
    return std::make_unique<SlurmHandle>(step_, member);
  }

 private:
  asio::io_context& io_;
  SlurmOptions options_;
  std::shared_ptr<SlurmStep> step_;  // the step still collecting nodes
};

}  // namespace

std::unique_ptr<Transport> make_slurm_transport(asio::io_context& io, SlurmOptions options) {
  return std::make_unique<SlurmTransport>(io, std::move(options));
}

}  // namespace dlaunch
