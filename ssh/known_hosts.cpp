#include "ssh/known_hosts.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <mutex>
#include <algorithm>
#include <sstream>

#include "ssh/session.h"

namespace dlaunch {
namespace {

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

// Host key algorithms in OpenSSH's order of preference, each with the
// known_hosts key type it produces. libssh2 drops the names it lacks.
struct HostKeyAlgorithms {
  int known_type;
  const char* names;
  const char* key_type;  // as users call it
  // Names an OpenSSH server of today still offers (ssh-rsa, SHA-1, is off
  // by default since OpenSSH 8.8).
  const char* accepted;
};
constexpr HostKeyAlgorithms kHostKeyAlgorithms[] = {
    {LIBSSH2_KNOWNHOST_KEY_ED25519, "ssh-ed25519", "Ed25519", "ssh-ed25519"},
    {LIBSSH2_KNOWNHOST_KEY_ECDSA_256, "ecdsa-sha2-nistp256", "ECDSA", "ecdsa-sha2-nistp256"},
    {LIBSSH2_KNOWNHOST_KEY_ECDSA_384, "ecdsa-sha2-nistp384", "ECDSA", "ecdsa-sha2-nistp384"},
    {LIBSSH2_KNOWNHOST_KEY_ECDSA_521, "ecdsa-sha2-nistp521", "ECDSA", "ecdsa-sha2-nistp521"},
    {LIBSSH2_KNOWNHOST_KEY_SSHRSA, "rsa-sha2-512,rsa-sha2-256,ssh-rsa", "RSA",
     "rsa-sha2-512,rsa-sha2-256"},
    {LIBSSH2_KNOWNHOST_KEY_SSHDSS, "ssh-dss", "DSA", ""},
};

std::vector<std::string> split_names(const char* names) {
  std::vector<std::string> out;
  std::istringstream in(names);
  for (std::string name; std::getline(in, name, ',');) out.push_back(name);
  return out;
}

constexpr int kPlainRaw = LIBSSH2_KNOWNHOST_TYPE_PLAIN | LIBSSH2_KNOWNHOST_KEYENC_RAW;

std::string base64(const char* data, std::size_t n) {
  std::string out(4 * ((n + 2) / 3) + 1, '\0');
  const int len =
      EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                      reinterpret_cast<const unsigned char*>(data), static_cast<int>(n));
  out.resize(static_cast<std::size_t>(len));
  return out;
}

std::vector<std::string> fields(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  for (std::string f; in >> f;) out.push_back(f);
  return out;
}

}  // namespace

std::string known_hosts_name(const std::string& host, int port) {
  return port == 22 ? host : "[" + host + "]:" + std::to_string(port);
}

KnownHosts::KnownHosts(LIBSSH2_SESSION* session, std::string path)
    : session_(session), known_(libssh2_knownhost_init(session)), path_(std::move(path)) {
  if (known_ == nullptr) throw SshError("cannot set up libssh2's known_hosts");
  std::ifstream in(path_);
  std::string line;
  libssh2_knownhost* last = nullptr;
  for (int number = 1; std::getline(in, line); ++number) {
    const auto f = fields(line);
    if (f.empty() || f[0][0] == '#') continue;
    if (f[0][0] == '@') {
      if (f[0] == "@revoked" && f.size() >= 4) revoked_.push_back(f[3]);
      continue;
    }
    if (libssh2_knownhost_readline(known_, line.data(), line.size(),
                                   LIBSSH2_KNOWNHOST_FILE_OPENSSH) != 0) {
      continue;  // as OpenSSH does: a line it cannot read is skipped, not fatal
    }
    // One line may add several entries ("a,b,c key"): all get its number.
    libssh2_knownhost* entry = nullptr;
    while (libssh2_knownhost_get(known_, &entry, last) == 0) {
      line_of_[entry] = number;
      last = entry;
    }
  }
}

KnownHosts::~KnownHosts() {
  libssh2_knownhost_free(known_);
}

KnownHosts::Check KnownHosts::check(const std::string& host, int port, const char* key,
                                    std::size_t key_len, int hostkey_type) const {
  const std::string encoded = base64(key, key_len);
  for (const auto& revoked : revoked_) {
    if (revoked == encoded) return {Result::revoked, 0};
  }
  libssh2_knownhost* entry = nullptr;
  const int rc = libssh2_knownhost_checkp(known_, host.c_str(), port, key, key_len,
                                          kPlainRaw | knownhost_key_type(hostkey_type), &entry);
  switch (rc) {
    case LIBSSH2_KNOWNHOST_CHECK_MATCH:
      return {Result::match, 0};
    case LIBSSH2_KNOWNHOST_CHECK_MISMATCH: {
      const auto it = line_of_.find(entry);
      return {Result::mismatch, it == line_of_.end() ? 0 : it->second};
    }
    default:
      return {Result::unknown, 0};
  }
}

std::vector<std::string> KnownHosts::supported_algorithms() const {
  std::vector<std::string> supported;
  const char** algs = nullptr;
  const int n = libssh2_session_supported_algs(session_, LIBSSH2_METHOD_HOSTKEY, &algs);
  for (int i = 0; i < n; ++i) supported.emplace_back(algs[i]);
  if (n > 0) libssh2_free(session_, algs);
  return supported;
}

bool KnownHosts::has_entry(const std::string& host, int port, int known_type) const {
  // A dummy key: when an entry of this type exists for the host the answer
  // is MISMATCH (libssh2 compares hashed names for us).
  return libssh2_knownhost_checkp(known_, host.c_str(), port, "x", 1, kPlainRaw | known_type,
                                  nullptr) == LIBSSH2_KNOWNHOST_CHECK_MISMATCH;
}

std::string KnownHosts::preferred_algorithms(const std::string& host, int port) const {
  // Only names this libssh2 has: 1.10 strips the others with an overlapping memcpy.
  const auto supported = supported_algorithms();
  std::string first, rest;
  for (const auto& algorithms : kHostKeyAlgorithms) {
    std::string& list = has_entry(host, port, algorithms.known_type) ? first : rest;
    for (const auto& name : split_names(algorithms.names)) {
      if (std::find(supported.begin(), supported.end(), name) != supported.end())
        list += (list.empty() ? "" : ",") + name;
    }
  }
  return first.empty() ? rest : rest.empty() ? first : first + "," + rest;
}

std::vector<std::string> KnownHosts::unusable_key_types(const std::string& host, int port) const {
  const auto supported = supported_algorithms();
  std::vector<std::string> unusable;
  for (const auto& algorithms : kHostKeyAlgorithms) {
    if (!has_entry(host, port, algorithms.known_type)) continue;
    bool usable = false;
    for (const auto& name : split_names(algorithms.accepted))
      usable = usable || std::find(supported.begin(), supported.end(), name) != supported.end();
    if (!usable) unusable.emplace_back(algorithms.key_type);
  }
  return unusable;
}

std::string KnownHosts::append(const std::string& host, int port, const char* key,
                               std::size_t key_len, int hostkey_type) {
  const std::string name = known_hosts_name(host, port);
  libssh2_knownhost* added = nullptr;
  if (libssh2_knownhost_addc(known_, name.c_str(), nullptr, key, key_len, nullptr, 0,
                             kPlainRaw | knownhost_key_type(hostkey_type), &added) != 0) {
    throw SshError("cannot record the host key of " + name);
  }
  std::string line(16384, '\0');
  std::size_t len = 0;
  if (libssh2_knownhost_writeline(known_, added, line.data(), line.size(), &len,
                                  LIBSSH2_KNOWNHOST_FILE_OPENSSH) != 0) {
    throw SshError("cannot format the host key of " + name);
  }
  line.resize(len);
  // Hosts are verified on parallel threads: one writer at a time, so that a
  // missing final newline is fixed once and lines never interleave.
  static std::mutex mutex;
  std::lock_guard lock(mutex);
  const auto slash = path_.rfind('/');
  if (slash != std::string::npos && slash > 0) ::mkdir(path_.substr(0, slash).c_str(), 0700);
  const int fd = ::open(path_.c_str(), O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) throw SshError("cannot write " + path_ + ": " + std::strerror(errno));
  struct stat st {};
  char last = '\n';
  if (::fstat(fd, &st) == 0 && st.st_size > 0) {
    if (::pread(fd, &last, 1, st.st_size - 1) != 1) last = '\n';
  }
  const std::string text = (last == '\n' ? "" : "\n") + line;
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  if (!ok) throw SshError("cannot write " + path_);
  return line;
}

}  // namespace dlaunch
