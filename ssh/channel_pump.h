// Copies bytes both ways between a libssh2 channel and a socket, without
// blocking: libssh2 sessions only read and write sockets, so a session carried
// inside a direct-tcpip channel (a jump host) needs a socket at its end, and a
// forwarded channel reaches a local TCP service through one.
//
// Not a thread: step() is called by whichever thread owns the channel's
// session (which must be in non-blocking mode), and poll_events() says what
// to wait for on the socket between steps. End of file is passed on in each
// direction (shutdown(SHUT_WR) on the socket, channel EOF towards the server);
// the pump is done when both directions have ended or either side failed.
#pragma once

#include <libssh2.h>

#include <string>

namespace dlaunch {

class ChannelPump {
 public:
  // Takes ownership of both: the channel is freed and the socket closed by the
  // destructor. The socket is made non-blocking.
  ChannelPump(LIBSSH2_CHANNEL* channel, int socket);
  ~ChannelPump();
  ChannelPump(const ChannelPump&) = delete;
  ChannelPump& operator=(const ChannelPump&) = delete;

  // Moves whatever can move now; true when any byte or end of file moved.
  bool step();
  bool done() const { return failed_ || (socket_shut_ && eof_sent_); }
  // Why it ended early; empty when both sides ended cleanly.
  const std::string& error() const { return error_; }
  // POLLIN/POLLOUT for the socket, given what is buffered.
  short poll_events() const;
  // True when libssh2 already holds channel data or EOF that step() has not
  // taken: a libssh2 write reads packets too, and those would otherwise sit
  // unseen while the caller waits for the session's socket.
  bool has_pending() const;
  int socket() const { return socket_; }

 private:
  bool channel_to_socket();
  bool socket_to_channel();
  void fail(std::string why);

  LIBSSH2_CHANNEL* channel_;
  int socket_;
  // One buffer per direction, refilled only once empty: a slow side holds
  // back the other instead of growing memory.
  std::string to_socket_, to_channel_;
  std::size_t to_socket_sent_ = 0, to_channel_sent_ = 0;
  bool channel_eof_ = false;  // the server sent EOF on the channel
  bool socket_shut_ = false;  // ... and it was passed on to the socket
  bool socket_eof_ = false;   // the socket's peer closed its writing side
  bool eof_sent_ = false;     // ... and it was passed on to the channel
  bool failed_ = false;
  std::string error_;
};

}  // namespace dlaunch
