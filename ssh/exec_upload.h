// Uploading a file without SFTP: hardened images often drop sshd's
// `Subsystem sftp` line, and pdsh or mpirun never needed it. One exec channel
// runs a /bin/sh script that writes its stdin to a temporary file next to the
// destination, checks the SHA-256 of what arrived (sha256sum, else shasum,
// else openssl), and renames it into place, so a half-sent or corrupted file
// is never run. The script's exit status says what went wrong.
#pragma once

#include <string>
#include <string_view>

#include "ssh/session.h"

namespace dlaunch {

// Exit statuses of the upload script; anything else is the shell's own.
enum class ExecUploadStatus {
  ok = 0,
  cannot_write = 3,  // mkdir or the temporary file failed (stderr says why)
  no_checksum_tool = 4,
  checksum_mismatch = 5,
  cannot_rename = 6,
};

// The remote command line: `exec /bin/sh -c <script> <name> <tmp> <dest> <sha256>`,
// every argument shell-quoted. The script is one line without ! or
// backslashes, so a csh or fish login shell passes it on unchanged. The
// directory of `dest` is created (mode 0700 by umask) when missing; `tmp` must
// be in the same directory, for the rename to be atomic.
std::string exec_upload_command(const std::string& tmp, const std::string& dest,
                                const std::string& sha256);

// What a failed status means, for messages; `dest` is the destination path.
std::string exec_upload_failure(int status, const std::string& dest, std::string_view stderr_text);

// The host has none of the tools to check the upload with: it was not kept.
class ExecUploadUnverifiable : public SshError {
 public:
  using SshError::SshError;
};

// The upload stopped part-way: the connection, or the host's end of the
// upload, failed while the file was being sent (not a refusal of the host's).
class UploadCutShort : public SshError {
 public:
  using SshError::SshError;
};

// Streams `data` over an exec channel running exec_upload_command. Throws
// SshError naming the host and what failed (ExecUploadUnverifiable for
// ExecUploadStatus::no_checksum_tool, UploadCutShort when cut short).
void upload_over_exec(SshSession& session, std::string_view data, const std::string& tmp,
                      const std::string& dest, const std::string& sha256);

}  // namespace dlaunch
