// Puts dlaunch-agent on a host once: it is cached there under its SHA-256
// (~/.cache/dlaunch/agent-<sha256>), so later runs skip the upload. The upload
// goes over SFTP (or, when the server refuses SFTP, over an exec channel:
// exec_upload.h) to a temporary name and is renamed into place, so a
// half-sent file is never run. A home directory that is not writable or is mounted noexec
// falls back to /tmp/dlaunch-<uid>.
#pragma once

#include <string>

#include "ssh/session.h"

namespace dlaunch {

struct AgentUpload {
  std::string remote_path;  // what to exec on the host
  bool uploaded = false;    // false: it was already there
  std::string method;       // how it was uploaded ("over SFTP", ...), for -v
  std::string warning;      // set when the /tmp fallback was used
};

// SHA-256 of a local file, hex.
std::string file_sha256(const std::string& path);
// The same, computed once per process and path: every host needs it.
std::string agent_sha256(const std::string& path);

AgentUpload ensure_agent(SshSession& session, const std::string& local_agent,
                         const std::string& sha256, const std::string& cache_dir);

}  // namespace dlaunch
