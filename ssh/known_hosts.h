// The user's known_hosts, read as OpenSSH reads it. libssh2 matches the
// entries (hashed |1| names, "[host]:port" for ports other than 22), but its
// own file reader stops at the first line it cannot parse, which would hide
// every key below it: a changed key could then pass as a new one. So lines are
// fed one at a time and bad ones skipped; @revoked keys are refused and
// @cert-authority lines ignored (no certificates here).
#pragma once

#include <libssh2.h>

#include <map>
#include <string>
#include <vector>

namespace dlaunch {

class KnownHosts {
 public:
  enum class Result { match, mismatch, unknown, revoked };
  struct Check {
    Result result = Result::unknown;
    int line = 0;  // mismatch: the line with the other key of that type
  };

  KnownHosts(LIBSSH2_SESSION* session, std::string path);  // a missing file is empty
  ~KnownHosts();
  KnownHosts(const KnownHosts&) = delete;
  KnownHosts& operator=(const KnownHosts&) = delete;

  // `key` as libssh2_session_hostkey returns it, `hostkey_type` its LIBSSH2_HOSTKEY_TYPE_*.
  Check check(const std::string& host, int port, const char* key, std::size_t key_len,
              int hostkey_type) const;
  // libssh2_session_method_pref(LIBSSH2_METHOD_HOSTKEY) list in OpenSSH's order,
  // with the key types known for this host first: a server has several host
  // keys, known_hosts often one of them, and the others would look unknown.
  std::string preferred_algorithms(const std::string& host, int port) const;
  // The key types known_hosts holds for this host that this libssh2 cannot
  // negotiate ("RSA" where it lacks rsa-sha2-256/512 and the server refuses
  // SHA-1's ssh-rsa): the host then shows another key, which looks unknown.
  std::vector<std::string> unusable_key_types(const std::string& host, int port) const;
  // OpenSSH's accept-new: appends one line (creating the file and its
  // directory, 0700, when missing) and returns it.
  std::string append(const std::string& host, int port, const char* key, std::size_t key_len,
                     int hostkey_type);

  const std::string& path() const { return path_; }

 private:
  // Whether known_hosts has an entry of `known_type` for the host.
  bool has_entry(const std::string& host, int port, int known_type) const;
  // The host key algorithms this libssh2 has.
  std::vector<std::string> supported_algorithms() const;

  LIBSSH2_SESSION* session_;
  LIBSSH2_KNOWNHOSTS* known_;
  std::string path_;
  std::vector<std::string> revoked_;                 // base64 key blobs
  std::map<const libssh2_knownhost*, int> line_of_;  // entry -> line in the file
};

// How known_hosts names a host: plain for port 22, "[host]:port" otherwise.
std::string known_hosts_name(const std::string& host, int port);

}  // namespace dlaunch
