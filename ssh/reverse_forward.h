// A reverse port forward (ssh -R 127.0.0.1:0:127.0.0.1:PORT): the host's sshd
// listens on its loopback address, on a port it picks, and every connection
// made there arrives here as a forwarded channel that is pumped to a TCP port
// on this machine. This is how agents reach a coordinator behind NAT: they
// never connect to it, they connect to their own host's loopback.
//
// Only the host's loopback: any user of the host can connect there, but
// reaches nothing more than the rendezvous, which still wants the job's
// secret from every agent.
//
// Single-threaded like the session it lives on: created while the session is
// blocking, then step() from the thread that watches the session in
// non-blocking mode, and destroyed with the session blocking again, before it.
#pragma once

#include <poll.h>

#include <memory>
#include <vector>

#include "ssh/session.h"

namespace dlaunch {

class ChannelPump;

class ReverseForward {
 public:
  // Asks the server to listen; throws SshError naming the host (with a hint
  // about AllowTcpForwarding) when it will not.
  ReverseForward(SshSession& session, int local_port);
  ~ReverseForward();
  ReverseForward(const ReverseForward&) = delete;
  ReverseForward& operator=(const ReverseForward&) = delete;

  int remote_port() const { return remote_port_; }
  // Accepts new connections and moves bytes on the open ones; true on progress.
  bool step();
  // Data libssh2 already read for an open connection (ChannelPump::has_pending).
  bool has_pending() const;
  // One pollfd per open connection's local socket.
  void add_poll_fds(std::vector<pollfd>& fds) const;
  std::size_t open_connections() const { return pumps_.size(); }

 private:
  void accept_one(LIBSSH2_CHANNEL* channel);

  SshSession& session_;
  LIBSSH2_LISTENER* listener_ = nullptr;
  int local_port_;
  int remote_port_ = 0;
  std::vector<std::unique_ptr<ChannelPump>> pumps_;
};

}  // namespace dlaunch
