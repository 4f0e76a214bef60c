// Puts dlaunch-agent on a host once: it is cached there under its SHA-256
// (~/.cache/dlaunch/agent-<sha256>), so later runs skip the upload. The upload
// goes over an exec channel that checks its SHA-256 on the host (exec_upload.h;
// over SFTP when the host has no tool for that) to a temporary name and is
// renamed into place, so a half-sent file is never run. A home directory that
// is not writable or is mounted noexec falls back to /tmp/dlaunch-<uid>.
// Whether a copy runs is left to the start command (agent_start.h), which
// tries both places: a cold start is that command, the upload, and the
// command again.
#pragma once

#include <string>

#include "ssh/session.h"

namespace dlaunch {

struct AgentUpload {
  std::string remote_path;  // where it went on the host
  std::string method;       // how it was uploaded ("over SFTP", ...), for -v
  std::string warning;      // set when the /tmp fallback was used
  std::string retried;      // why a first upload was cut short and sent again
};

// The SHA-256 of the agent at `path` (followed through symbolic links), hex:
// computed once per process and path (every host needs it), and remembered
// between runs while the file is unchanged (transfer/digest_cache.h).
std::string agent_sha256(const std::string& path);

// Uploads the agent into `cache_dir` (which the start command has made), or
// into /tmp/dlaunch-<uid> when `cache_copy_broken` (the start command found a
// copy there that does not run) or the upload into cache_dir fails.
AgentUpload upload_agent(SshSession& session, const std::string& local_agent,
                         const std::string& sha256, const std::string& cache_dir,
                         bool cache_copy_broken);
// The /tmp/dlaunch-<uid> upload alone: for when a copy just written into
// `cache_dir` does not start there (a home mounted noexec).
AgentUpload upload_agent_to_tmp(SshSession& session, const std::string& local_agent,
                                const std::string& sha256, const std::string& cache_dir);

}  // namespace dlaunch
