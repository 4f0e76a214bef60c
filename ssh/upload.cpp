#include "ssh/upload.h"

#include <libssh2_sftp.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

#include "common/posix.h"
#include "protocol/auth.h"
#include "ssh/exec_upload.h"
#include "ssh/shell_quote.h"
#include "transfer/digest_cache.h"

namespace dlaunch {
namespace {

// Whether libssh2_sftp_init failed because the session itself is gone (then
// nothing else will work either) rather than because the server has no SFTP.
bool session_lost(LIBSSH2_SESSION* session) {
  switch (libssh2_session_last_errno(session)) {
    case LIBSSH2_ERROR_SOCKET_SEND:
    case LIBSSH2_ERROR_SOCKET_RECV:
    case LIBSSH2_ERROR_SOCKET_DISCONNECT:
    case LIBSSH2_ERROR_SOCKET_TIMEOUT:
    case LIBSSH2_ERROR_TIMEOUT:
      return true;
    default:
      return false;
  }
}

// The agent's bytes, read once per process and path and shared by every
// host's upload (reading the file per host cost more CPU than the upload).
std::shared_ptr<const std::string> agent_bytes(const std::string& path) {
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<const std::string>> cache;
  std::lock_guard lock(mutex);
  auto& bytes = cache[path];
  if (bytes == nullptr) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    struct stat st {};
    if (fd < 0 || ::fstat(fd, &st) != 0) {
      if (fd >= 0) ::close(fd);
      throw SshError("cannot read " + path + ": " + std::strerror(errno));
    }
    auto text = std::make_shared<std::string>(read_all(fd));
    ::close(fd);
    if (text->empty() || text->size() != static_cast<std::size_t>(st.st_size)) {
      throw SshError("cannot read " + path + ": got " + std::to_string(text->size()) + " of " +
                     std::to_string(st.st_size) + " bytes");
    }
    bytes = std::move(text);
  }
  return bytes;
}

void upload_over_sftp(SshSession& s, LIBSSH2_SFTP* sftp, std::string_view data,
                      const std::string& tmp, const std::string& remote) {
  LIBSSH2_SFTP_HANDLE* file = libssh2_sftp_open(
      sftp, tmp.c_str(), LIBSSH2_FXF_WRITE | LIBSSH2_FXF_CREAT | LIBSSH2_FXF_TRUNC,
      LIBSSH2_SFTP_S_IRWXU | LIBSSH2_SFTP_S_IRGRP | LIBSSH2_SFTP_S_IXGRP | LIBSSH2_SFTP_S_IROTH |
          LIBSSH2_SFTP_S_IXOTH);
  if (file == nullptr) {
    throw SshError(s.target().label + ": cannot write " + tmp + " over SFTP: " + s.last_error());
  }
  std::size_t sent = 0;
  while (sent < data.size()) {
    const ssize_t n = libssh2_sftp_write(file, data.data() + sent, data.size() - sent);
    if (n <= 0) {
      libssh2_sftp_close(file);
      throw SshError(s.target().label + ": upload of the agent failed: " + s.last_error());
    }
    sent += static_cast<std::size_t>(n);
  }
  // The mode given at open is cut by the server's umask; set it outright.
  LIBSSH2_SFTP_ATTRIBUTES attrs{};
  attrs.flags = LIBSSH2_SFTP_ATTR_PERMISSIONS;
  attrs.permissions = 0755;
  libssh2_sftp_fsetstat(file, &attrs);
  libssh2_sftp_close(file);
  // Hosts running another job may upload the same file at once: the rename is
  // atomic and either copy is the same bytes.
  if (libssh2_sftp_rename_ex(sftp, tmp.c_str(), static_cast<unsigned>(tmp.size()), remote.c_str(),
                             static_cast<unsigned>(remote.size()),
                             LIBSSH2_SFTP_RENAME_OVERWRITE | LIBSSH2_SFTP_RENAME_ATOMIC |
                                 LIBSSH2_SFTP_RENAME_NATIVE) != 0) {
    s.run("mv -f " + shell_quote(tmp) + " " + shell_quote(remote), nullptr);
  }
}

void remove_partial_upload(SshSession& s, const std::string& tmp) {
  try {
    s.run("rm -f " + shell_quote(tmp), nullptr);
  } catch (const SshError&) {
    // The connection is gone too: the next start removes it (agent_start.h).
  }
}

// Uploads over an exec channel, else over SFTP; returns how it went, for -v.
// The exec channel streams at the full window of the channel, and the host
// checks the SHA-256 of what arrived. SFTP waits for the server's status of
// every 30 kB write, which made the 6.6 MB agent take 1.7 s on a bridge where
// the exec channel takes 0.6 s (and OpenSSH's `ssh host 'cat > f'` 0.5 s); it
// is the way left when the host has no tool to check the hash with.
std::string upload(SshSession& s, const std::string& local, const std::string& remote,
                   const std::string& sha256) {
  const std::shared_ptr<const std::string> data = agent_bytes(local);
  // The exec channel's script removes its temporary file whatever went wrong,
  // so SFTP may use the same name.
  const std::string tmp = remote + ".tmp-" + auth::to_hex(auth::random_bytes(6));
  std::string unverifiable;
  try {
    upload_over_exec(s, *data, tmp, remote, sha256);
    return "over an exec channel";
  } catch (const ExecUploadUnverifiable& e) {
    unverifiable = e.what();
  } catch (const UploadCutShort&) {
    // The host's end may have died before its script could remove what
    // arrived; a session that still answers removes it now.
    remove_partial_upload(s, tmp);
    throw;
  }
  LIBSSH2_SFTP* sftp = libssh2_sftp_init(s.get());
  if (sftp == nullptr) {
    if (session_lost(s.get())) {
      throw SshError(s.target().label + ": SFTP is not available: " + s.last_error());
    }
    throw SshError(unverifiable + "; and SFTP is not available either: " + s.last_error());
  }
  struct SftpGuard {
    LIBSSH2_SFTP* p;
    ~SftpGuard() { libssh2_sftp_shutdown(p); }
  } guard{sftp};
  upload_over_sftp(s, sftp, *data, tmp, remote);
  return "over SFTP (the exec channel's: " + unverifiable + ")";
}

}  // namespace

std::string agent_sha256(const std::string& path) {
  static std::mutex mutex;
  static std::map<std::string, std::string> cache;
  std::lock_guard lock(mutex);
  auto [it, added] = cache.try_emplace(path);
  if (added) {
    try {
      // Hashing both architectures' agents was a quarter of a one-host
      // launch's CPU: remembered between runs while the files are unchanged.
      struct stat st {};
      const auto digest = ::stat(path.c_str(), &st) == 0 ? file_digest(path, st) : std::nullopt;
      if (!digest) throw SshError("cannot read " + path + ": " + std::strerror(errno));
      it->second = auth::to_hex(*digest);
    } catch (...) {
      cache.erase(it);
      throw;
    }
  }
  return it->second;
}

namespace {

constexpr const char* kNoexec = "does not let the agent run (noexec?)";

std::string shown_directory(const std::string& cache_dir) {
  return cache_dir.rfind('/', 0) == 0 ? cache_dir : "~/" + cache_dir;
}

// An upload cut short says nothing about the directory: it is sent once more
// (`retried` says why). A second failure (the connection may be gone) fails
// this host with both causes, as UploadCutShort.
std::string upload_once_more_if_cut(SshSession& session, const std::string& local_agent,
                                    const std::string& remote, const std::string& sha256,
                                    std::string& retried) {
  try {
    return upload(session, local_agent, remote, sha256);
  } catch (const UploadCutShort& e) {
    retried = std::string(e.what()) + "; uploading it again";
    try {
      return upload(session, local_agent, remote, sha256);
    } catch (const SshError& again) {
      throw UploadCutShort(std::string(e.what()) + "; and again: " + again.what() +
                           ". Check the link to the host and run the job again");
    }
  }
}

AgentUpload upload_into_tmp(SshSession& session, const std::string& local_agent,
                            const std::string& sha256, const std::string& cache_dir,
                            const std::string& why) {
  const std::string& label = session.target().label;
  std::string dir;
  // Our own directory in /tmp: created private, and refused when someone else
  // owns it or planted a symbolic link there first.
  session.run(
      "d=/tmp/dlaunch-$(id -u); umask 077; mkdir -p \"$d\" && test ! -L \"$d\" && "
      "test -O \"$d\" && chmod 700 \"$d\" && printf %s \"$d\"",
      &dir);
  if (dir.empty()) {
    throw SshError(label + ": cannot install the agent: " + shown_directory(cache_dir) + " " + why +
                   ", and /tmp/dlaunch-<uid> on the host is not usable (not ours, or a "
                   "symbolic link). Fix the permissions of either directory");
  }
  AgentUpload result;
  result.remote_path = dir + "/agent-" + sha256;
  result.warning = label + ": " + shown_directory(cache_dir) + " " + why + "; using " +
                   result.remote_path + " instead";
  result.method = upload(session, local_agent, result.remote_path, sha256);
  return result;
}

}  // namespace

AgentUpload upload_agent(SshSession& session, const std::string& local_agent,
                         const std::string& sha256, const std::string& cache_dir,
                         bool cache_copy_broken) {
  // A copy that is there yet does not run: most likely the home directory is
  // mounted noexec, and uploading there again would not help.
  std::string why = kNoexec;
  if (!cache_copy_broken) {
    AgentUpload result;
    result.remote_path = cache_dir + "/agent-" + sha256;
    try {
      result.method =
          upload_once_more_if_cut(session, local_agent, result.remote_path, sha256, result.retried);
      return result;
    } catch (const UploadCutShort&) {
      throw;
    } catch (const SshError& e) {
      why = std::string("is not writable (") + e.what() + ")";
    }
  }
  return upload_into_tmp(session, local_agent, sha256, cache_dir, why);
}

AgentUpload upload_agent_to_tmp(SshSession& session, const std::string& local_agent,
                                const std::string& sha256, const std::string& cache_dir) {
  return upload_into_tmp(session, local_agent, sha256, cache_dir, kNoexec);
}

}  // namespace dlaunch
