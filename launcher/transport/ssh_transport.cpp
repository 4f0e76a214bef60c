#include "launcher/transport/ssh_transport.h"

#include <poll.h>
#include <pwd.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <asio.hpp>
#include <atomic>
#include <condition_variable>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <future>
#include <map>
#include <mutex>
#include <thread>

#include "common/agent_arch.h"
#include "common/log.h"
#include "common/posix.h"
#include "protocol/launch_spec.h"
#include "ssh/agent_start.h"
#include "ssh/config.h"
#include "ssh/jump_spec.h"
#include "ssh/reverse_forward.h"
#include "ssh/session.h"
#include "ssh/upload.h"

namespace dlaunch {
namespace {

// Requests from the coordinator's thread to a host's thread.
struct Control {
  std::atomic<bool> close_stdin{false};
  std::atomic<bool> kill{false};
  int wake_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  ~Control() { ::close(wake_fd); }
  void wake() {
    const std::uint64_t one = 1;
    (void)!::write(wake_fd, &one, sizeof one);
  }
};

class SshHandle : public AgentHandle {
 public:
  explicit SshHandle(std::shared_ptr<Control> control) : control_(std::move(control)) {}
  void close_stdin() override {
    control_->close_stdin = true;
    control_->wake();
  }
  void kill() override {
    control_->kill = true;
    control_->wake();
  }

 private:
  std::shared_ptr<Control> control_;
};

// Bounds how many hosts are in the connect/authenticate/upload phase at once.
class Slots {
 public:
  explicit Slots(int n) : free_(n) {}
  void acquire() {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [this] { return free_ > 0; });
    --free_;
  }
  void release() {
    {
      std::lock_guard lock(mutex_);
      ++free_;
    }
    cv_.notify_one();
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  int free_;
};

std::string local_user() {
  if (const passwd* pw = ::getpwuid(::getuid())) return pw->pw_name;
  const char* user = std::getenv("USER");
  return user ? user : "root";
}

int exit_code_of(LIBSSH2_CHANNEL* channel) {
  char* signal = nullptr;
  libssh2_channel_get_exit_signal(channel, &signal, nullptr, nullptr, nullptr, nullptr, nullptr);
  if (signal != nullptr) {
    const std::string name = signal;
    std::free(signal);
    for (int s = 1; s < 32; ++s) {
      if (signal_name(s) == "SIG" + name) return 128 + s;
    }
    return 128 + SIGKILL;
  }
  return libssh2_channel_get_exit_status(channel);
}

class SshTransport : public Transport {
 public:
  SshTransport(asio::io_context& io, SshOptions options)
      : io_(io), options_(std::move(options)), slots_(std::max(1, options_.parallel)) {
    home_ = !options_.home.empty() ? options_.home : home_directory();
    config_ = SshConfig::load(home_ + "/.ssh/config");
    if (const char* cache = std::getenv("DLAUNCH_REMOTE_CACHE"); cache && *cache) {
      options_.remote_cache_dir = cache;
    }
  }

  ~SshTransport() override {
    for (auto& c : controls_) {
      c->kill = true;
      c->wake();
    }
    for (auto& t : threads_) t.join();
  }

  std::unique_ptr<AgentHandle> start(const HostEntry& host, const AgentLaunch& launch,
                                     AgentEvents events) override {
    auto control = std::make_shared<Control>();
    controls_.push_back(control);
    threads_.emplace_back([this, host, launch, events = std::move(events), control] {
      run_host(host, launch, events, *control);
    });
    return std::make_unique<SshHandle>(control);
  }

 private:
  // Where to connect for `alias` (a hosts-file address or a bastion), with
  // ~/.ssh/config filling in what the hosts file leaves unset.
  SshTarget resolve(const std::string& alias, const std::string& user, std::optional<int> port,
                    const std::string& identity) const {
    const SshHostSettings cfg = config_.lookup(alias);
    SshTarget t;
    t.label = alias;
    t.hostname = cfg.hostname.empty() ? alias : cfg.hostname;
    t.port = port.value_or(cfg.port.value_or(22));
    t.user = !user.empty() ? user : !cfg.user.empty() ? cfg.user : local_user();
    auto add = [&t, this](std::string path) {
      if (path.rfind("~/", 0) == 0) path = home_ + path.substr(1);
      for (const auto& existing : t.identity_files) {
        if (existing == path) return;
      }
      t.identity_files.push_back(path);
    };
    if (!identity.empty()) add(identity);
    for (const auto& f : cfg.identity_files) add(f);
    for (const char* f : {"~/.ssh/id_ed25519", "~/.ssh/id_ecdsa", "~/.ssh/id_rsa"}) add(f);
    t.known_hosts = home_ + "/.ssh/known_hosts";
    t.accept_new_host_keys = options_.accept_new_host_keys;
    t.timeout_s = options_.connect_timeout_s;
    return t;
  }

  // An error names the host and the jump (the hosts file's or ~/.ssh/config's
  // ProxyJump) that cannot be read.
  Result<SshTarget> target_for(const HostEntry& host) const {
    SshTarget t = resolve(host.address, host.user, host.port, host.identity);
    t.label = host.name.empty() ? host.address : host.name;
    // The hosts file wins over ~/.ssh/config, as ssh -J wins over ProxyJump.
    const bool from_file = !host.jump.empty();
    const std::string jump = from_file ? host.jump : config_.lookup(host.address).proxy_jump;
    if (jump.empty()) return t;
    const JumpChain chain = parse_jump_chain(jump);
    if (!chain.error.empty()) {
      return fail(t.label + ": " + (from_file ? "jump" : "ProxyJump in ~/.ssh/config") + " '" +
                  jump + "' " + chain.error);
    }
    // A bastion is a host of its own: its user, port and keys come from the
    // hop or ~/.ssh/config for its name, never from the host behind it; the
    // host's identity file is offered there too.
    for (const JumpHop& hop : chain.hops) {
      SshTarget bastion = resolve(hop.host, hop.user, hop.port, host.identity);
      bastion.label = t.label + ": bastion " + hop.host;
      t.jumps.push_back(std::move(bastion));
    }
    return t;
  }

  void post_exit(const AgentEvents& events, int code, std::string error) {
    asio::post(io_, [events, code, error] {
      if (events.on_exit) events.on_exit(code, error);
    });
  }

  void post_stderr(const AgentEvents& events, std::string bytes) {
    asio::post(io_, [events, bytes = std::move(bytes)] {
      if (events.on_stderr) events.on_stderr(bytes);
    });
  }

  // The launch spec is built on the coordinator's thread, which owns the state
  // it is made from.
  std::optional<std::string> make_spec(const AgentLaunch& launch, const std::string& address,
                                       Control& control) {
    auto promise = std::make_shared<std::promise<std::string>>();
    auto future = promise->get_future();
    asio::post(io_, [promise, launch, address] { promise->set_value(launch.make_stdin(address)); });
    while (future.wait_for(std::chrono::milliseconds(100)) != std::future_status::ready) {
      if (control.kill || control.close_stdin) return std::nullopt;
    }
    return future.get();
  }

  void run_host(const HostEntry& host, const AgentLaunch& launch, const AgentEvents& events,
                Control& control) {
    auto resolved = target_for(host);
    if (!resolved) return post_exit(events, -1, resolved.error());
    SshTarget target = std::move(*resolved);
    target.cancel_fd = control.wake_fd;
    std::unique_ptr<SshSession> session;
    AgentStart started;
    slots_.acquire();
    if (control.kill || control.close_stdin) {  // stopped while waiting for a slot
      slots_.release();
      return post_exit(events, -1, target.label + ": cancelled");
    }
    try {
      session = std::make_unique<SshSession>(target);
      started = start_agent(*session, launch, events);
    } catch (const std::exception& e) {
      slots_.release();
      return post_exit(events, -1, e.what());
    }
    slots_.release();
    run_channel(*session, started.channel, launch, events, control);
  }

  // The agents at hand by architecture, with their SHA-256: the host's
  // `uname -m` picks one in the start command.
  struct Agents {
    std::map<std::string, std::string> path;
    std::map<std::string, std::string> sha;
  };
  static const Agents& agents_for(const std::string& native_agent) {
    static std::mutex mutex;
    static std::map<std::string, Agents> known;
    std::lock_guard lock(mutex);
    if (auto it = known.find(native_agent); it != known.end()) return it->second;
    // Kept only when whole: an agent that cannot be read (agent_sha256 throws
    // SshError, that host's error) is tried again for the next host, rather
    // than leaving an entry without its digest.
    Agents agents;
    std::error_code ec;
    const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
    agents.path = agents_by_arch(
        native_agent, ec ? std::string() : (self.parent_path() / "../lib/dlaunch").string());
    for (const auto& [arch, path] : agents.path) agents.sha[arch] = agent_sha256(path);
    return known.emplace(native_agent, std::move(agents)).first->second;
  }

  // Starts the cached agent; uploads it first when the host has no copy that runs.
  AgentStart start_agent(SshSession& s, const AgentLaunch& launch, const AgentEvents& events) {
    const std::string& label = s.target().label;
    const Agents& agents = agents_for(launch.agent_binary);
    std::map<std::string, std::string> environment;
    if (!launch.job.empty()) environment[kAgentJobVariable] = launch.job;
    const std::string command =
        agent_start_command(options_.remote_cache_dir, agents.sha, environment);
    AgentStart started = start_cached_agent(s, command);
    std::string warning;
    std::string sha;
    if (started.channel != nullptr) {
      log::info(label, ": agent already on host at ", started.path);
      for (const auto& [arch, hash] : agents.sha)
        if (started.path.ends_with("/agent-" + hash)) sha = hash;
    } else {
      const auto local = agents.path.find(started.arch);
      if (local == agents.path.end())
        throw SshError(label + ": " + no_agent_message(started.arch, agents.path));
      sha = agents.sha.at(started.arch);
      const std::string which =
          started.arch == native_arch() ? "the agent" : "the " + started.arch + " agent";
      AgentUpload up =
          upload_agent(s, local->second, sha, options_.remote_cache_dir, started.present);
      if (!up.retried.empty()) post_stderr(events, "warning: " + up.retried + "\n");
      log::info(label, ": uploaded ", which, " to ", up.remote_path, " ", up.method);
      started = start_cached_agent(s, command);
      if (started.channel == nullptr && up.warning.empty()) {
        // Written into the cache, yet it does not run there: a home mounted noexec.
        up = upload_agent_to_tmp(s, local->second, sha, options_.remote_cache_dir);
        log::info(label, ": uploaded ", which, " to ", up.remote_path, " ", up.method);
        started = start_cached_agent(s, command);
      }
      warning = up.warning;
      if (started.channel == nullptr) {
        throw SshError(label + ": the uploaded agent does not run on the host (" + up.remote_path +
                       "): the agent is static and needs only Linux 3.10+ of its architecture (" +
                       started.arch + "); is /tmp mounted noexec, or the file system full?");
      }
    }
    const std::string home_copy = options_.remote_cache_dir + "/agent-" + sha;
    if (warning.empty() && started.path != home_copy) {
      const std::string& dir = options_.remote_cache_dir;
      warning = label + ": " + (dir.rfind('/', 0) == 0 ? dir : "~/" + dir) +
                " on the host is not writable or is mounted noexec; the agent runs from " +
                started.path;
    }
    if (!warning.empty()) post_stderr(events, "warning: " + warning + "\n");
    return started;
  }

  // The agent runs and waits for its launch spec on stdin.
  void run_channel(SshSession& s, LIBSSH2_CHANNEL* channel, const AgentLaunch& launch,
                   const AgentEvents& events, Control& control) {
    const std::string& label = s.target().label;
    auto spec = make_spec(launch, s.local_address(), control);
    if (!spec) {
      libssh2_channel_free(channel);
      return post_exit(events, -1, label + ": cancelled");
    }
    std::unique_ptr<ReverseForward> forward;
    if (options_.rendezvous_via_ssh) {
      try {
        forward = forward_rendezvous(s, *spec);
      } catch (const SshError& e) {
        libssh2_channel_free(channel);
        return post_exit(events, -1, e.what());
      }
    }
    std::size_t sent = 0;
    while (sent < spec->size()) {
      const ssize_t n = libssh2_channel_write(channel, spec->data() + sent, spec->size() - sent);
      if (n <= 0) {
        libssh2_channel_free(channel);
        return post_exit(events, -1, label + ": cannot send the launch spec: " + s.last_error());
      }
      sent += static_cast<std::size_t>(n);
    }
    watch_channel(s, channel, forward.get(), events, control);
  }

  // Opens the reverse forward and points the spec at its end on the host.
  std::unique_ptr<ReverseForward> forward_rendezvous(SshSession& s, std::string& spec) {
    // The coordinator's port is in the spec; the forward's port is known only
    // once the server has picked it.
    const auto probe = route_spec_through_forward(spec, 0);
    if (!probe) throw SshError(s.target().label + ": internal error: unreadable launch spec");
    auto forward = std::make_unique<ReverseForward>(s, probe->coordinator_port);
    spec = route_spec_through_forward(spec, forward->remote_port())->bytes;
    log::info(s.target().label, ": the agent reaches the rendezvous through SSH at 127.0.0.1:",
              forward->remote_port(), " on the host");
    return forward;
  }

  // From here the agent runs; watch its channel without blocking so that
  // close_stdin() and kill() from the coordinator are seen at once. Exactly one
  // on_exit: the exit status once the server closes the channel, 137 after
  // kill(), -1 when the connection is lost first.
  void watch_channel(SshSession& s, LIBSSH2_CHANNEL* channel, ReverseForward* forward,
                     const AgentEvents& events, Control& control) {
    libssh2_session_set_blocking(s.get(), 0);
    s.start_keepalives();
    enum class End { exited, killed, lost } end = End::lost;
    bool eof_sent = false;
    char buffer[8192];
    for (;;) {
      if (control.kill) {
        end = End::killed;
        break;
      }
      if (control.close_stdin && !eof_sent) {
        const int rc = libssh2_channel_send_eof(channel);
        if (rc != LIBSSH2_ERROR_EAGAIN) eof_sent = true;
      }
      bool progress = false, failed = false;
      for (int stream : {0, 1}) {
        for (;;) {
          const ssize_t n = stream == 0
                                ? libssh2_channel_read(channel, buffer, sizeof buffer)
                                : libssh2_channel_read_stderr(channel, buffer, sizeof buffer);
          if (n > 0) {
            progress = true;
            post_stderr(events, std::string(buffer, static_cast<std::size_t>(n)));
            continue;
          }
          failed = failed || (n < 0 && n != LIBSSH2_ERROR_EAGAIN);
          break;
        }
      }
      if (failed) break;
      if (forward != nullptr) progress = forward->step() || progress;
      if (libssh2_channel_eof(channel)) {
        // The exit status comes before the server's close: wait for that.
        const int rc = libssh2_channel_wait_closed(channel);
        if (rc == 0) {
          end = End::exited;
          break;
        }
        if (rc != LIBSSH2_ERROR_EAGAIN) break;
      }
      int next_keepalive_s = 0;
      const int keepalive = libssh2_keepalive_send(s.get(), &next_keepalive_s);
      if (keepalive < 0 && keepalive != LIBSSH2_ERROR_EAGAIN) break;
      if (progress || (forward != nullptr && forward->has_pending())) continue;
      // libssh2 may want to write (a full send window, a pending EOF) as well as read.
      const int directions = libssh2_session_block_directions(s.get());
      short want = POLLIN;
      if (directions & LIBSSH2_SESSION_BLOCK_OUTBOUND) want |= POLLOUT;
      std::vector<pollfd> fds = {{s.socket(), want, 0}, {control.wake_fd, POLLIN, 0}};
      if (forward != nullptr) forward->add_poll_fds(fds);
      ::poll(fds.data(), fds.size(), 1000);
      if (fds[1].revents & POLLIN) {
        std::uint64_t drained;
        (void)!::read(control.wake_fd, &drained, sizeof drained);
      }
    }
    const std::string why = libssh2_session_last_errno(s.get()) == LIBSSH2_ERROR_SOCKET_RECV
                                ? "the connection was closed or reset"
                                : s.last_error();
    libssh2_session_set_blocking(s.get(), 1);
    libssh2_session_set_timeout(s.get(), 2000);
    const int code = end == End::exited ? exit_code_of(channel) : 128 + SIGKILL;
    libssh2_channel_free(channel);
    if (end == End::lost) {
      return post_exit(events, -1,
                       s.target().label + ": lost the SSH connection to " + s.route() + " (" + why +
                           "); the agent there stops its ranks when it notices");
    }
    post_exit(events, code, "");
  }

  asio::io_context& io_;
  SshOptions options_;
  Slots slots_;
  std::string home_;
  SshConfig config_;
  std::vector<std::shared_ptr<Control>> controls_;
  std::vector<std::thread> threads_;
};

}  // namespace

std::optional<ForwardedSpec> route_spec_through_forward(std::string_view spec, int remote_port) {
  // The stream is an 8-byte header (magic, length) and the body; re-encoding
  // the decoded spec must give the same bytes, which checks both.
  constexpr std::size_t kHeader = 8;
  if (spec.size() < kHeader) return std::nullopt;
  auto decoded = decode_launch_spec_body(spec.substr(kHeader));
  if (!decoded || encode_launch_spec(*decoded) != spec) return std::nullopt;
  ForwardedSpec out;
  out.coordinator_port = decoded->rdzv_port;
  decoded->rdzv_host = "127.0.0.1";
  decoded->rdzv_port = static_cast<std::uint16_t>(remote_port);
  out.bytes = encode_launch_spec(*decoded);
  return out;
}

std::unique_ptr<Transport> make_ssh_transport(asio::io_context& io, const SshOptions& options) {
  return std::make_unique<SshTransport>(io, options);
}

}  // namespace dlaunch
