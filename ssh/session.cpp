#include "ssh/session.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>

#include <openssl/evp.h>

#include "common/console.h"
#include "ssh/jump.h"
#include "ssh/known_hosts.h"

namespace dlaunch {
namespace {

std::string base64_unpadded(const unsigned char* data, int n) {
  std::string out(static_cast<std::size_t>(4 * ((n + 2) / 3)) + 1, '\0');
  const int len = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), data, n);
  out.resize(static_cast<std::size_t>(len));
  while (!out.empty() && out.back() == '=') out.pop_back();
  return out;
}

std::string expand_home(const std::string& path) {
  if (path.rfind("~/", 0) == 0) {
    const char* home = std::getenv("HOME");
    return std::string(home ? home : "") + path.substr(1);
  }
  return path;
}

// Why a key file did not log us in. Keys with a passphrase cannot be used
// without asking for it, and dlaunch runs unattended: they belong in ssh-agent.
std::string key_failure(int rc) {
  switch (rc) {
    case LIBSSH2_ERROR_AUTHENTICATION_FAILED:
      return "not accepted by the host";
    case LIBSSH2_ERROR_PUBLICKEY_UNVERIFIED:  // the server took the public key, signing failed
    case LIBSSH2_ERROR_FILE:
      return "cannot be read: passphrase-protected? load it into ssh-agent";
    default:
      return "error " + std::to_string(rc);
  }
}

}  // namespace

void ensure_libssh2_initialized() {
  static std::once_flag once;
  std::call_once(once, [] { libssh2_init(0); });
}

std::string host_key_fingerprint(LIBSSH2_SESSION* session) {
  const char* hash = libssh2_hostkey_hash(session, LIBSSH2_HOSTKEY_HASH_SHA256);
  if (hash == nullptr) return "(unknown)";
  return "SHA256:" + base64_unpadded(reinterpret_cast<const unsigned char*>(hash), 32);
}

SshSession::SshSession(const SshTarget& target) : target_(target) {
  ensure_libssh2_initialized();
  try {
    open();
  } catch (...) {
    close();  // a constructor that throws gets no destructor call
    throw;
  }
}

void SshSession::open() {
  if (target_.jumps.empty()) {
    connect_socket();
  } else {
    connect_through_jumps();
  }
  session_ = libssh2_session_init();
  if (session_ == nullptr) throw SshError(target_.label + ": cannot create an SSH session");
  libssh2_session_set_blocking(session_, 1);
  libssh2_session_set_timeout(session_, static_cast<long>(target_.timeout_s) * 1000);
  KnownHosts known(session_, target_.known_hosts);
  if (const std::string prefs = known.preferred_algorithms(target_.hostname, target_.port);
      !prefs.empty()) {
    libssh2_session_method_pref(session_, LIBSSH2_METHOD_HOSTKEY, prefs.c_str());
  }
  if (libssh2_session_handshake(session_, fd_) != 0) {
    throw SshError(target_.label + ": SSH handshake with " + route() + " failed: " + last_error() +
                   " (is an SSH server listening there?)");
  }
  verify_host_key(known);
  authenticate();
}

SshSession::~SshSession() {
  close();
}

void SshSession::close() {
  if (session_ != nullptr) {
    libssh2_session_set_blocking(session_, 1);
    libssh2_session_set_timeout(session_, 2000);
    libssh2_session_disconnect(session_, "dlaunch done");
    if (libssh2_session_free(session_) != 0 && fd_ >= 0) {
      // The peer never answered within the timeout (a link that went down
      // without a FIN): libssh2 keeps the session, waiting for a channel's
      // close. With the socket shut, its reads and writes fail at once and
      // the second call frees everything.
      ::shutdown(fd_, SHUT_RDWR);
      libssh2_session_free(session_);
    }
    session_ = nullptr;
  }
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  tunnel_.reset();  // after fd_: the bastions see this session's end first
}

std::string SshSession::route() const {
  std::string out = target_.hostname + ":" + std::to_string(target_.port);
  for (std::size_t i = 0; i < target_.jumps.size(); ++i) {
    const SshTarget& hop = target_.jumps[i];
    out += (i == 0 ? " via bastion " : ", then ") + hop.hostname + ":" + std::to_string(hop.port);
  }
  return out;
}

void SshSession::connect_through_jumps() {
  // The last bastion is the one that connects to this host; the ones before
  // it are its own way in, hence the recursion.
  SshTarget via = target_.jumps.back();
  via.jumps.assign(target_.jumps.begin(), target_.jumps.end() - 1);
  via.cancel_fd = target_.cancel_fd;
  auto bastion = std::make_unique<SshSession>(via);
  tunnel_ = std::make_unique<JumpTunnel>(std::move(bastion), target_.hostname, target_.port);
  fd_ = tunnel_->take_socket();
  // What the host sees of this machine is unknown; the first bastion's view of
  // it is the best guess for where the host can route back to.
  local_address_ = tunnel_->bastion().local_address();
}

std::string SshSession::last_error() const {
  if (session_ == nullptr) return "no session";
  char* message = nullptr;
  libssh2_session_last_error(session_, &message, nullptr, 0);
  return message ? message : "unknown error";
}

void SshSession::connect_socket() {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(target_.port);
  if (const int rc = ::getaddrinfo(target_.hostname.c_str(), port.c_str(), &hints, &found);
      rc != 0) {
    throw SshError(target_.label + ": cannot resolve " + target_.hostname + ": " +
                   ::gai_strerror(rc));
  }
  std::string why = "no address";
  for (addrinfo* ai = found; ai != nullptr && fd_ < 0; ai = ai->ai_next) {
    const int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    int rc = ::connect(fd, ai->ai_addr, ai->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      pollfd p[2] = {{fd, POLLOUT, 0}, {target_.cancel_fd, POLLIN, 0}};
      rc = ::poll(p, target_.cancel_fd >= 0 ? 2 : 1, target_.timeout_s * 1000);
      if (rc > 0 && p[0].revents == 0) {
        ::close(fd);
        ::freeaddrinfo(found);
        throw SshError(target_.label + ": cancelled while connecting");
      }
      if (rc == 0) {
        why = "timed out after " + std::to_string(target_.timeout_s) + " s";
        rc = -1;
      } else {
        int err = 0;
        socklen_t len = sizeof err;
        ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
        rc = err == 0 ? 0 : -1;
        if (err != 0) why = std::strerror(err);
      }
    } else if (rc != 0) {
      why = std::strerror(errno);
    }
    if (rc == 0) {
      fd_ = fd;
    } else {
      ::close(fd);
    }
  }
  ::freeaddrinfo(found);
  if (fd_ < 0) {
    throw SshError(target_.label + ": cannot connect to " + target_.hostname + ":" +
                   std::to_string(target_.port) + ": " + why +
                   " (is the host up and its SSH port reachable? see --ssh-timeout)");
  }
  ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) & ~O_NONBLOCK);
  // The channel stays open for the whole job. Kernel defaults would notice a
  // vanished host after two hours of silence, or fifteen minutes of
  // retransmissions; these notice it within about a minute.
  const int on = 1, idle_s = 30, interval_s = 10, probes = 3;
  const unsigned user_timeout_ms = 60'000;
  ::setsockopt(fd_, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
  ::setsockopt(fd_, IPPROTO_TCP, TCP_KEEPIDLE, &idle_s, sizeof idle_s);
  ::setsockopt(fd_, IPPROTO_TCP, TCP_KEEPINTVL, &interval_s, sizeof interval_s);
  ::setsockopt(fd_, IPPROTO_TCP, TCP_KEEPCNT, &probes, sizeof probes);
  ::setsockopt(fd_, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout_ms, sizeof user_timeout_ms);
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
  sockaddr_storage local{};
  socklen_t len = sizeof local;
  char text[INET6_ADDRSTRLEN] = {};
  if (::getsockname(fd_, reinterpret_cast<sockaddr*>(&local), &len) == 0) {
    if (local.ss_family == AF_INET) {
      ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(&local)->sin_addr, text, sizeof text);
    } else {
      ::inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(&local)->sin6_addr, text, sizeof text);
    }
  }
  local_address_ = text;
}

void SshSession::verify_host_key(KnownHosts& known) {
  std::size_t key_len = 0;
  int key_type = 0;
  const char* key = libssh2_session_hostkey(session_, &key_len, &key_type);
  if (key == nullptr) throw SshError(target_.label + ": the server sent no host key");
  const std::string fingerprint = host_key_fingerprint(session_);
  const std::string name = known_hosts_name(target_.hostname, target_.port);
  const auto check = known.check(target_.hostname, target_.port, key, key_len, key_type);
  switch (check.result) {
    case KnownHosts::Result::match:
      return;
    case KnownHosts::Result::revoked:
      throw SshError(target_.label + ": the host key of " + name + " (" + fingerprint +
                     ") is marked @revoked in " + known.path() + ". dlaunch refuses it");
    case KnownHosts::Result::mismatch:
      throw SshError(
          target_.label + ": HOST KEY CHANGED for " + name + ": it is now " + fingerprint +
          ", which does not match the key in " + known.path() +
          (check.line > 0 ? ":" + std::to_string(check.line) : "") +
          ". Someone may be intercepting the connection, or the host was "
          "reinstalled; dlaunch refuses it (--accept-new-host-keys does not change "
          "that). If the change is legitimate, remove the old key with: ssh-keygen -R '" +
          name + "' -f " + known.path());
    case KnownHosts::Result::unknown:
      break;
  }
  if (!target_.accept_new_host_keys) {
    if (const auto unusable = known.unusable_key_types(target_.hostname, target_.port);
        !unusable.empty()) {
      // The host's known key is one this libssh2 cannot verify: it showed
      // another, which is not wrong, only not yet known.
      throw SshError(target_.label + ": " + known.path() + " holds " + unusable.front() +
                     " host keys only for " + name + ", and this libssh2 (" + libssh2_version(0) +
                     ") cannot verify " + unusable.front() +
                     " keys against an OpenSSH server of today (rsa-sha2-256/512 need libssh2 "
                     "1.11; SHA-1's ssh-rsa is refused). The host showed " +
                     fingerprint +
                     " instead: after checking it, add it with --accept-new-host-keys, or: "
                     "ssh-keyscan -t ed25519,ecdsa -p " +
                     std::to_string(target_.port) + " " + target_.hostname + " >> " + known.path());
    }
    throw SshError(target_.label + ": unknown host key for " + name + " (" + fingerprint +
                   "), not in " + known.path() +
                   ". After checking the fingerprint, accept it with --accept-new-host-keys, or: "
                   "ssh-keyscan -p " +
                   std::to_string(target_.port) + " " + target_.hostname + " >> " + known.path());
  }
  try {
    known.append(target_.hostname, target_.port, key, key_len, key_type);
  } catch (const SshError& e) {
    throw SshError(target_.label + ": " + e.what());
  }
  // From an SSH worker thread: the console is the one path for what dlaunch
  // prints, and its terminal writer takes lines from any thread.
  console().note(target_.label + ": added host key " + fingerprint + " for " + name + " to " +
                 known.path());
}

void SshSession::authenticate() {
  const std::string& user = target_.user;
  const char* methods =
      libssh2_userauth_list(session_, user.c_str(), static_cast<unsigned>(user.size()));
  if (methods == nullptr && libssh2_userauth_authenticated(session_)) return;
  const std::string offered = methods ? methods : "none (" + last_error() + ")";
  std::vector<std::string> tried, missing;
  const bool publickey = methods != nullptr && std::strstr(methods, "publickey") != nullptr;
  if (publickey && std::getenv("SSH_AUTH_SOCK") != nullptr) {
    if (authenticate_with_agent(&tried)) return;
  }
  for (const auto& raw : publickey ? target_.identity_files : std::vector<std::string>{}) {
    const std::string key = expand_home(raw);
    if (::access(key.c_str(), R_OK) != 0) {
      missing.push_back(key);
      continue;
    }
    const std::string pub = key + ".pub";
    const bool has_pub = ::access(pub.c_str(), R_OK) == 0;
    const int rc = libssh2_userauth_publickey_fromfile_ex(
        session_, user.c_str(), static_cast<unsigned>(user.size()), has_pub ? pub.c_str() : nullptr,
        key.c_str(), "");
    if (rc == 0) return;
    tried.push_back(key + " (" + key_failure(rc) + ")");
  }
  auto join = [](const std::vector<std::string>& items) {
    std::string out;
    for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
    return out;
  };
  std::string detail =
      "server accepts: " + offered + "; tried: " + (tried.empty() ? "nothing usable" : join(tried));
  if (!missing.empty()) detail += "; no such key file: " + join(missing);
  throw SshError(target_.label + ": authentication as " + user + "@" + target_.hostname +
                 " failed (" + detail +
                 "). Set `identity` in the hosts file, load your key into ssh-agent, or add your "
                 "public key to the host's ~/.ssh/authorized_keys");
}

bool SshSession::authenticate_with_agent(std::vector<std::string>* tried) {
  LIBSSH2_AGENT* agent = libssh2_agent_init(session_);
  if (agent == nullptr) return false;
  int offered = 0;
  bool ok = false;
  std::string failure;
  if (libssh2_agent_connect(agent) != 0) {
    failure = "cannot connect to $SSH_AUTH_SOCK";
  } else if (libssh2_agent_list_identities(agent) != 0) {
    failure = "cannot list its keys";
  } else {
    libssh2_agent_publickey* identity = nullptr;
    libssh2_agent_publickey* previous = nullptr;
    while (!ok && libssh2_agent_get_identity(agent, &identity, previous) == 0) {
      ++offered;
      ok = libssh2_agent_userauth(agent, target_.user.c_str(), identity) == 0;
      previous = identity;
    }
    failure = std::to_string(offered) + (offered == 1 ? " key rejected" : " keys rejected");
  }
  libssh2_agent_disconnect(agent);
  libssh2_agent_free(agent);
  if (!ok) tried->push_back("ssh-agent (" + failure + ")");
  return ok;
}

int SshSession::run(const std::string& command, std::string* out, std::string* err) {
  LIBSSH2_CHANNEL* channel = libssh2_channel_open_session(session_);
  if (channel == nullptr)
    throw SshError(target_.label + ": cannot open a channel: " + last_error());
  if (libssh2_channel_exec(channel, command.c_str()) != 0) {
    libssh2_channel_free(channel);
    throw SshError(target_.label + ": cannot run a command: " + last_error());
  }
  char buffer[4096];
  for (;;) {
    const ssize_t n = libssh2_channel_read(channel, buffer, sizeof buffer);
    if (n > 0 && out) out->append(buffer, static_cast<std::size_t>(n));
    const ssize_t e = libssh2_channel_read_stderr(channel, buffer, sizeof buffer);
    if (e > 0 && err) err->append(buffer, static_cast<std::size_t>(e));
    if (n <= 0 && e <= 0) break;
  }
  libssh2_channel_close(channel);
  libssh2_channel_wait_closed(channel);
  const int status = libssh2_channel_get_exit_status(channel);
  libssh2_channel_free(channel);
  return status;
}

void SshSession::start_keepalives() {
  // No reply asked for: libssh2 1.10 never takes a server's answer off its
  // packet queue, so each answered keepalive would stay in memory for the
  // life of the session (and a one-byte packet there upsets
  // libssh2_poll_channel_read). The traffic alone is what keeps the path open.
  libssh2_keepalive_config(session_, 0, 15);
}

}  // namespace dlaunch
