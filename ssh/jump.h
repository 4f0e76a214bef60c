// A connection to a host through a jump host (bastion), as OpenSSH's
// ProxyJump makes it: the bastion's own SSH session (its host key checked and
// the user authenticated there) opens a direct-tcpip channel to host:port, and
// the host's session runs inside that channel. libssh2 sessions need a socket,
// so the channel is carried to one end of a socketpair by a ChannelPump on a
// thread of its own; the host's SshSession takes the other end as it would a
// TCP socket, and checks the host's key under the host's own name.
//
// Only the pump thread touches the bastion's session once the channel is
// open. Shutdown: the host's session closes its end, the pump passes the EOF
// on and ends; the destructor then stops the thread if it still runs and
// disconnects from the bastion.
#pragma once

#include <memory>
#include <string>
#include <thread>

#include "ssh/session.h"

namespace dlaunch {

class ChannelPump;

class JumpTunnel {
 public:
  // Opens the channel from `bastion` to host:port; throws SshError naming the
  // bastion and the host.
  JumpTunnel(std::unique_ptr<SshSession> bastion, const std::string& host, int port);
  ~JumpTunnel();
  JumpTunnel(const JumpTunnel&) = delete;
  JumpTunnel& operator=(const JumpTunnel&) = delete;

  // The socket for the host's session; the caller owns and closes it.
  int take_socket();
  const SshSession& bastion() const { return *bastion_; }

 private:
  void run();

  std::unique_ptr<SshSession> bastion_;
  std::unique_ptr<ChannelPump> pump_;  // owned by the thread once it runs
  int inner_ = -1;                     // the socketpair end for the host's session
  int stop_fd_ = -1;                   // eventfd: the destructor asks the thread to end
  std::thread thread_;
};

}  // namespace dlaunch
