// One SSH connection made with libssh2: TCP connect with a timeout, handshake,
// host key verification against known_hosts, user authentication. Blocking;
// each host's connection lives on its own thread in the SSH transport. Every
// failure is an SshError whose message names the host and what to do.
#pragma once

#include <libssh2.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace dlaunch {

class JumpTunnel;
class KnownHosts;

class SshError : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct SshTarget {
  std::string label;     // the host's name in the plan, for messages
  std::string hostname;  // what to connect to (after ~/.ssh/config)
  int port = 22;
  std::string user;
  std::vector<std::string> identity_files;  // tried after ssh-agent, in order
  std::string known_hosts;                  // path of the user's known_hosts
  bool accept_new_host_keys = false;
  int timeout_s = 10;
  int cancel_fd = -1;  // when readable, stop waiting for the TCP connection: the job is stopping
  // Bastions to go through, first hop first (ssh/jump.h); each is checked and
  // authenticated as a host of its own. `hostname` is then resolved by the
  // last bastion, and the host key checked under that name.
  std::vector<SshTarget> jumps;
};

class SshSession {
 public:
  // Connects, verifies the host key and authenticates; throws SshError.
  explicit SshSession(const SshTarget& target);
  ~SshSession();
  SshSession(const SshSession&) = delete;
  SshSession& operator=(const SshSession&) = delete;

  LIBSSH2_SESSION* get() const { return session_; }
  int socket() const { return fd_; }
  // This machine's address on the connection: what the host can route back to.
  const std::string& local_address() const { return local_address_; }
  const SshTarget& target() const { return target_; }
  // "host:port", and the bastions when there are any, for messages.
  std::string route() const;
  // The last libssh2 error, for messages.
  std::string last_error() const;
  // Runs a short command and returns its exit status; stdout into `out`.
  int run(const std::string& command, std::string* out, std::string* err = nullptr);
  // Sends a keepalive every 15 s from then on (libssh2_keepalive_send, called
  // by whoever watches the session), so that idle NATs and firewalls keep
  // the connection.
  void start_keepalives();

 private:
  void open();
  void close();
  void connect_socket();
  void connect_through_jumps();
  void verify_host_key(KnownHosts& known);
  void authenticate();
  bool authenticate_with_agent(std::vector<std::string>* tried);

  SshTarget target_;
  std::unique_ptr<JumpTunnel> tunnel_;  // set when reached through bastions; outlives fd_
  int fd_ = -1;
  LIBSSH2_SESSION* session_ = nullptr;
  std::string local_address_;
};

// "SHA256:base64" as OpenSSH prints it.
std::string host_key_fingerprint(LIBSSH2_SESSION* session);
void ensure_libssh2_initialized();

}  // namespace dlaunch
