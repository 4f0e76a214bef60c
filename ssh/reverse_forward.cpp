#include "ssh/reverse_forward.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/log.h"
#include "ssh/channel_pump.h"

namespace dlaunch {
namespace {

// Connections queued by the server before we accept them. An agent keeps one
// rendezvous connection and opens another only to reconnect.
constexpr int kQueue = 16;

int connect_local(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<std::uint16_t>(port));
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

ReverseForward::ReverseForward(SshSession& session, int local_port)
    : session_(session), local_port_(local_port) {
  listener_ =
      libssh2_channel_forward_listen_ex(session_.get(), "127.0.0.1", 0, &remote_port_, kQueue);
  if (listener_ == nullptr) {
    throw SshError(session_.target().label +
                   ": the host's SSH server refused a reverse port forward for the rendezvous (" +
                   session_.last_error() +
                   "); allow it (AllowTcpForwarding yes or remote in its sshd_config), or drop "
                   "via = \"ssh\" / --rdzv-via-ssh and let the host connect to the coordinator");
  }
}

ReverseForward::~ReverseForward() {
  pumps_.clear();
  if (listener_ != nullptr) libssh2_channel_forward_cancel(listener_);
}

void ReverseForward::accept_one(LIBSSH2_CHANNEL* channel) {
  const int fd = connect_local(local_port_);
  if (fd < 0) {
    // The agent sees its connection closed and retries, or gives up as it
    // would with an unreachable coordinator.
    log::warn(session_.target().label,
              ": cannot pass a forwarded connection on to 127.0.0.1:", local_port_, ": ",
              std::strerror(errno));
    libssh2_channel_free(channel);
    return;
  }
  pumps_.push_back(std::make_unique<ChannelPump>(channel, fd));
}

bool ReverseForward::step() {
  bool progress = false;
  while (LIBSSH2_CHANNEL* channel = libssh2_channel_forward_accept(listener_)) {
    accept_one(channel);
    progress = true;
  }
  for (auto& pump : pumps_) progress = pump->step() || progress;
  if (std::ranges::any_of(pumps_, [](const auto& p) { return p->done(); })) {
    // Freeing a channel waits for the server's close: a short blocking round
    // trip, rare enough (an agent reconnecting or leaving) to take inline.
    LIBSSH2_SESSION* s = session_.get();
    libssh2_session_set_blocking(s, 1);
    std::erase_if(pumps_, [](const auto& p) { return p->done(); });
    libssh2_session_set_blocking(s, 0);
    progress = true;
  }
  return progress;
}

bool ReverseForward::has_pending() const {
  return std::ranges::any_of(pumps_, [](const auto& p) { return p->has_pending(); });
}

void ReverseForward::add_poll_fds(std::vector<pollfd>& fds) const {
  for (const auto& pump : pumps_) fds.push_back({pump->socket(), pump->poll_events(), 0});
}

}  // namespace dlaunch
