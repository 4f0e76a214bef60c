#include "launcher/ssh_session.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <mutex>

#include <openssl/evp.h>

namespace dlaunch {
namespace {

std::string base64_unpadded(const unsigned char* data, int n) {
  std::string out(static_cast<std::size_t>(4 * ((n + 2) / 3)) + 1, '\0');
  const int len = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), data, n);
  out.resize(static_cast<std::size_t>(len));
  while (!out.empty() && out.back() == '=') out.pop_back();
  return out;
}

int knownhost_key_type(int hostkey_type) {
  switch (hostkey_type) {
    case LIBSSH2_HOSTKEY_TYPE_RSA:
      return LIBSSH2_KNOWNHOST_KEY_SSHRSA;
    case LIBSSH2_HOSTKEY_TYPE_DSS:
      return LIBSSH2_KNOWNHOST_KEY_SSHDSS;
    case LIBSSH2_HOSTKEY_TYPE_ECDSA_256:
      return LIBSSH2_KNOWNHOST_KEY_ECDSA_256;
    case LIBSSH2_HOSTKEY_TYPE_ECDSA_384:
      return LIBSSH2_KNOWNHOST_KEY_ECDSA_384;
    case LIBSSH2_HOSTKEY_TYPE_ECDSA_521:
      return LIBSSH2_KNOWNHOST_KEY_ECDSA_521;
    case LIBSSH2_HOSTKEY_TYPE_ED25519:
      return LIBSSH2_KNOWNHOST_KEY_ED25519;
    default:
      return LIBSSH2_KNOWNHOST_KEY_UNKNOWN;
  }
}

// How known_hosts names a host: plain for port 22, "[host]:port" otherwise.
std::string known_hosts_name(const std::string& host, int port) {
  return port == 22 ? host : "[" + host + "]:" + std::to_string(port);
}

std::string expand_home(const std::string& path) {
  if (path.rfind("~/", 0) == 0) {
    const char* home = std::getenv("HOME");
    return std::string(home ? home : "") + path.substr(1);
  }
  return path;
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
  connect_socket();
  session_ = libssh2_session_init();
  if (session_ == nullptr) throw SshError(target_.label + ": cannot create an SSH session");
  libssh2_session_set_blocking(session_, 1);
  libssh2_session_set_timeout(session_, static_cast<long>(target_.timeout_s) * 1000);
  if (libssh2_session_handshake(session_, fd_) != 0) {
    throw SshError(target_.label + ": SSH handshake with " + target_.hostname + ":" +
                   std::to_string(target_.port) + " failed: " + last_error() +
                   " (is an SSH server listening there?)");
  }
  verify_host_key();
  authenticate();
}

SshSession::~SshSession() {
  if (session_ != nullptr) {
    libssh2_session_set_blocking(session_, 1);
    libssh2_session_set_timeout(session_, 2000);
    libssh2_session_disconnect(session_, "dlaunch done");
    libssh2_session_free(session_);
  }
  if (fd_ >= 0) ::close(fd_);
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
      pollfd p{fd, POLLOUT, 0};
      rc = ::poll(&p, 1, target_.timeout_s * 1000);
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
  int on = 1;
  ::setsockopt(fd_, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
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

void SshSession::verify_host_key() {
  std::size_t key_len = 0;
  int key_type = 0;
  const char* key = libssh2_session_hostkey(session_, &key_len, &key_type);
  if (key == nullptr) throw SshError(target_.label + ": the server sent no host key");
  const std::string fingerprint = host_key_fingerprint(session_);
  LIBSSH2_KNOWNHOSTS* known = libssh2_knownhost_init(session_);
  struct Guard {
    LIBSSH2_KNOWNHOSTS* k;
    ~Guard() { libssh2_knownhost_free(k); }
  } guard{known};
  libssh2_knownhost_readfile(known, target_.known_hosts.c_str(), LIBSSH2_KNOWNHOST_FILE_OPENSSH);
  const int type_mask =
      LIBSSH2_KNOWNHOST_TYPE_PLAIN | LIBSSH2_KNOWNHOST_KEYENC_RAW | knownhost_key_type(key_type);
  libssh2_knownhost* entry = nullptr;
  const int check = libssh2_knownhost_checkp(known, target_.hostname.c_str(), target_.port, key,
                                             key_len, type_mask, &entry);
  const std::string name = known_hosts_name(target_.hostname, target_.port);
  if (check == LIBSSH2_KNOWNHOST_CHECK_MATCH) return;
  if (check == LIBSSH2_KNOWNHOST_CHECK_MISMATCH) {
    throw SshError(target_.label + ": HOST KEY CHANGED for " + name + " (now " + fingerprint +
                   "). It does not "
                   "match the key in " +
                   target_.known_hosts +
                   ": someone may be intercepting the connection, "
                   "or the host was reinstalled. dlaunch refuses it. If the change is legitimate, "
                   "remove the old "
                   "key with: ssh-keygen -R '" +
                   name + "'");
  }
  if (!target_.accept_new_host_keys) {
    throw SshError(target_.label + ": unknown host key for " + name + " (" + fingerprint +
                   "), not in " + target_.known_hosts +
                   ". After checking the fingerprint, accept "
                   "it with --accept-new-host-keys, or: ssh-keyscan -p " +
                   std::to_string(target_.port) + " " + target_.hostname + " >> " +
                   target_.known_hosts);
  }
  // OpenSSH's accept-new: record the key, append one line to known_hosts.
  libssh2_knownhost* added = nullptr;
  if (libssh2_knownhost_addc(known, name.c_str(), nullptr, key, key_len, nullptr, 0, type_mask,
                             &added) != 0) {
    throw SshError(target_.label + ": cannot record the host key of " + name);
  }
  char line[16384];
  std::size_t out_len = 0;
  if (libssh2_knownhost_writeline(known, added, line, sizeof line, &out_len,
                                  LIBSSH2_KNOWNHOST_FILE_OPENSSH) != 0) {
    throw SshError(target_.label + ": cannot format the host key of " + name);
  }
  const std::string dir = target_.known_hosts.substr(0, target_.known_hosts.rfind('/'));
  ::mkdir(dir.c_str(), 0700);
  std::ofstream out(target_.known_hosts, std::ios::app);
  out.write(line, static_cast<std::streamsize>(out_len));
  if (!out) throw SshError(target_.label + ": cannot write " + target_.known_hosts);
  std::fprintf(stderr, "dlaunch: %s: added host key %s for %s to %s\n", target_.label.c_str(),
               fingerprint.c_str(), name.c_str(), target_.known_hosts.c_str());
}

void SshSession::authenticate() {
  const std::string& user = target_.user;
  const char* methods =
      libssh2_userauth_list(session_, user.c_str(), static_cast<unsigned>(user.size()));
  if (methods == nullptr && libssh2_userauth_authenticated(session_)) return;
  std::vector<std::string> tried;
  const bool publickey = methods != nullptr && std::strstr(methods, "publickey") != nullptr;
  if (publickey && std::getenv("SSH_AUTH_SOCK") != nullptr) {
    if (LIBSSH2_AGENT* agent = libssh2_agent_init(session_)) {
      if (libssh2_agent_connect(agent) == 0 && libssh2_agent_list_identities(agent) == 0) {
        libssh2_agent_publickey* identity = nullptr;
        libssh2_agent_publickey* previous = nullptr;
        while (libssh2_agent_get_identity(agent, &identity, previous) == 0) {
          if (libssh2_agent_userauth(agent, user.c_str(), identity) == 0) {
            libssh2_agent_disconnect(agent);
            libssh2_agent_free(agent);
            return;
          }
          previous = identity;
        }
      }
      libssh2_agent_disconnect(agent);
      libssh2_agent_free(agent);
      tried.push_back("ssh-agent");
    }
  }
  if (publickey) {
    for (const auto& raw : target_.identity_files) {
      const std::string key = expand_home(raw);
      if (::access(key.c_str(), R_OK) != 0) continue;
      const std::string pub = key + ".pub";
      const bool has_pub = ::access(pub.c_str(), R_OK) == 0;
      if (libssh2_userauth_publickey_fromfile_ex(
              session_, user.c_str(), static_cast<unsigned>(user.size()),
              has_pub ? pub.c_str() : nullptr, key.c_str(), "") == 0) {
        return;
      }
      tried.push_back(key);
    }
  }
  std::string list;
  for (const auto& t : tried) list += (list.empty() ? "" : ", ") + t;
  throw SshError(target_.label + ": authentication as " + user + "@" + target_.hostname +
                 " failed (server accepts: " + (methods ? methods : "?") +
                 "; tried: " + (list.empty() ? "no usable key" : list) +
                 "). Set `identity` in the hosts file, load your key into ssh-agent, or add your "
                 "public key to the host's ~/.ssh/authorized_keys");
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

}  // namespace dlaunch
