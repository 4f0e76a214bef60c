#include "rendezvous/relayed_server.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <system_error>
#include <thread>

#include "common/log.h"
#include "common/posix.h"
#include "rendezvous/relay_process.h"
#include "rendezvous/server.h"

namespace dlaunch {
namespace {

std::uint8_t current_log_level() {
  for (int level = 0; level < 3; ++level) {
    if (log::enabled(static_cast<log::Level>(level))) return static_cast<std::uint8_t>(level);
  }
  return 3;
}

// In the forked child: the listener and the relay's end of the socket pair at
// the descriptors the relay expects, nothing else open, then this executable
// under the relay's name. Only async-signal-safe calls until exec.
[[noreturn]] void exec_relay(int listener_fd, int channel_fd) {
  // Its own process group: a terminal's Ctrl-C is the coordinator's to act
  // on (it stops the agents through the relay), and the relay must not die
  // of it first. It dies with the coordinator.
  ::setpgid(0, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  const int listener = ::fcntl(listener_fd, F_DUPFD, 16);
  const int channel = ::fcntl(channel_fd, F_DUPFD, 16);
  if (listener < 0 || channel < 0 || ::dup2(listener, kRelayListenerFd) < 0 ||
      ::dup2(channel, kRelayChannelFd) < 0)
    ::_exit(127);
  close_fds_from(kRelayChannelFd + 1);
  const char* argv[] = {kRelayProgramName, nullptr};
  ::execv("/proc/self/exe", const_cast<char* const*>(argv));
  ::_exit(127);
}

}  // namespace

RelayedRendezvous::RelayedRendezvous(asio::io_context& io, const asio::ip::tcp::endpoint& endpoint,
                                     const std::string& secret, Callbacks callbacks,
                                     Options options, std::size_t relays)
    : callbacks_(std::move(callbacks)),
      heartbeat_timer_(io),
      heartbeat_interval_(options.heartbeat_timeout / 3) {
  auto listener = open_rendezvous_listener(io, endpoint);
  port_ = listener.local_endpoint().port();
  RelaySetup setup;
  setup.secret = secret;
  setup.handshake_timeout = options.handshake_timeout;
  setup.heartbeat_timeout = options.heartbeat_timeout;
  setup.max_pending = options.max_pending;
  setup.max_sessions = options.max_sessions;
  setup.log_level = current_log_level();
  const std::string setup_frame = encode_relay(RelayKind::setup, 0, encode_setup(setup));
  relays_.resize(relays);
  for (std::size_t i = 0; i < relays; ++i) spawn(io, i, listener.native_handle(), setup_frame);
  send_heartbeats();
  // The relays hold the listener from here on; this process accepts nothing.
}

void RelayedRendezvous::send_heartbeats() {
  if (stopped_ || heartbeat_interval_.count() <= 0) return;
  heartbeat_timer_.expires_after(heartbeat_interval_);
  heartbeat_timer_.async_wait([this](const asio::error_code& ec) {
    if (ec || stopped_) return;
    for (auto& relay : relays_)
      if (relay.channel) relay.channel->send(encode_relay(RelayKind::heartbeat, 0, {}));
    send_heartbeats();
  });
}

RelayedRendezvous::~RelayedRendezvous() {
  stop();
}

void RelayedRendezvous::spawn(asio::io_context& io, std::size_t index, int listener_fd,
                              const std::string& setup) {
  int ends[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) != 0)
    throw std::system_error(errno, std::generic_category(), "a socket pair for a rendezvous relay");
  const pid_t pid = fork_with_default_signals();
  if (pid < 0) {
    const int error = errno;
    ::close(ends[0]);
    ::close(ends[1]);
    throw std::system_error(error, std::generic_category(), "starting a rendezvous relay");
  }
  if (pid == 0) exec_relay(listener_fd, ends[1]);
  ::close(ends[1]);
  auto& relay = relays_[index];
  relay.pid = pid;
  relay.channel = std::make_shared<RelayChannel>(io, ends[0], kMaxRelayFrame);
  relay.channel->start(
      {[this, index](Frame&& frame) { on_frame(index, frame); },
       [this, index](const std::string& reason) { on_relay_closed(index, reason); },
       [this, index] {
         // The relay caught up: who waits and is not full there may send.
         auto& r = relays_[index];
         std::vector<ConnId> ready;
         for (const auto& [local, callback] : r.space_wanted)
           if (!r.full.contains(local)) ready.push_back(local);
         for (ConnId local : ready) give_space(r, local);
       }});
  relay.channel->send(setup);
}

RelayedRendezvous::Relay* RelayedRendezvous::relay_of(ConnId id, ConnId* local) {
  const auto index = static_cast<std::size_t>(id >> kRelayShift);
  if (index == 0 || index > relays_.size()) return nullptr;
  *local = id & ((ConnId{1} << kRelayShift) - 1);
  return &relays_[index - 1];
}

const RelayedRendezvous::Relay* RelayedRendezvous::relay_of(ConnId id, ConnId* local) const {
  return const_cast<RelayedRendezvous*>(this)->relay_of(id, local);
}

void RelayedRendezvous::on_frame(std::size_t index, const Frame& frame) {
  auto& relay = relays_[index];
  auto relayed = decode_relay(frame);
  if (!relayed) return relay.channel->close("a malformed frame from the relay");
  const ConnId id = global_id(index, relayed->conn);
  switch (relayed->kind) {
    case RelayKind::joined: {
      auto message = decode_message_frame(relayed->body);
      auto* join = message ? std::get_if<proto::Join>(&*message) : nullptr;
      if (join == nullptr) return relay.channel->close("a malformed Join from the relay");
      relay.joined.insert(relayed->conn);
      if (callbacks_.on_join) callbacks_.on_join(id, *join);
      return;
    }
    case RelayKind::message: {
      auto message = decode_message_frame(relayed->body);
      if (!message) return relay.channel->close("a malformed message from the relay");
      if (callbacks_.on_message) callbacks_.on_message(id, std::move(*message));
      return;
    }
    case RelayKind::closed: {
      relay.full.erase(relayed->conn);
      relay.space_wanted.erase(relayed->conn);
      if (relay.joined.erase(relayed->conn) > 0 && callbacks_.on_close)
        callbacks_.on_close(id, std::string(relayed->body));
      return;
    }
    case RelayKind::full:
      relay.full.insert(relayed->conn);
      return;
    case RelayKind::space:
      relay.full.erase(relayed->conn);
      if (!relay.channel->over_limit()) give_space(relay, relayed->conn);
      return;
    default:
      return relay.channel->close("an unexpected frame from the relay");
  }
}

void RelayedRendezvous::give_space(Relay& relay, ConnId local) {
  auto it = relay.space_wanted.find(local);
  if (it == relay.space_wanted.end()) return;
  auto callback = std::move(it->second);
  relay.space_wanted.erase(it);
  if (callback) callback();
}

// A relay that ends before the job does takes its agents' connections with it
// (they see their connection close, as if node 0 had gone): each is reported
// closed, and the job fails as for any lost agent.
void RelayedRendezvous::on_relay_closed(std::size_t index, const std::string& reason) {
  if (stopped_) return;
  auto& relay = relays_[index];
  std::string what = "ended: " + reason;
  int status = 0;
  const bool reaped = relay.pid > 0 && ::waitpid(relay.pid, &status, WNOHANG) == relay.pid;
  if (reaped) {
    what = WIFSIGNALED(status) ? "was killed by " + signal_name(WTERMSIG(status))
                               : "exited with code " + std::to_string(shell_status(status));
  }
  const std::string pid = "(pid " + std::to_string(relay.pid) + ") ";
  log::error("rendezvous relay ", index + 1, " of ", relays_.size(), " ", pid, what);
  const std::string why = "its rendezvous relay " + pid + what;
  if (reaped) relay.pid = -1;
  auto joined = std::move(relay.joined);
  relay.joined.clear();
  relay.full.clear();
  relay.space_wanted.clear();
  for (ConnId local : joined)
    if (callbacks_.on_close) callbacks_.on_close(global_id(index, local), why);
}

void RelayedRendezvous::send(ConnId id, const proto::Message& message) {
  ConnId local = 0;
  if (auto* relay = relay_of(id, &local))
    relay->channel->send(encode_relay(RelayKind::send, local, proto::encode(message)));
}

void RelayedRendezvous::close(ConnId id, const std::string& reason) {
  ConnId local = 0;
  if (auto* relay = relay_of(id, &local))
    relay->channel->send(encode_relay(RelayKind::close, local, reason));
}

bool RelayedRendezvous::output_full(ConnId id) const {
  ConnId local = 0;
  const auto* relay = relay_of(id, &local);
  return relay == nullptr || relay->channel->closed() || !relay->joined.contains(local) ||
         relay->full.contains(local) || relay->channel->over_limit();
}

void RelayedRendezvous::on_output_space(ConnId id, std::function<void()> callback) {
  ConnId local = 0;
  if (auto* relay = relay_of(id, &local); relay && relay->joined.contains(local))
    relay->space_wanted[local] = std::move(callback);
}

void RelayedRendezvous::set_reading_paused(bool paused) {
  const auto kind = paused ? RelayKind::pause_reading : RelayKind::resume_reading;
  for (auto& relay : relays_) relay.channel->send(encode_relay(kind, 0, {}));
}

void RelayedRendezvous::stop() {
  if (stopped_) return;
  stopped_ = true;
  heartbeat_timer_.cancel();
  for (auto& relay : relays_)
    if (relay.channel) relay.channel->close("the rendezvous stopped");
  reap();
}

// Each relay ends at its socket's close (closing its agents' connections);
// one that has not within a few seconds is killed.
void RelayedRendezvous::reap() {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  for (auto& relay : relays_) {
    while (relay.pid > 0) {
      int status = 0;
      const pid_t done = ::waitpid(relay.pid, &status, WNOHANG);
      if (done == relay.pid || (done < 0 && errno != EINTR)) {
        relay.pid = -1;
      } else if (std::chrono::steady_clock::now() > deadline) {
        ::kill(relay.pid, SIGKILL);
        ::waitpid(relay.pid, &status, 0);
        relay.pid = -1;
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    }
  }
}

}  // namespace dlaunch
