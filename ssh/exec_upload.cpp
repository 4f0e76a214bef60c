#include "ssh/exec_upload.h"

#include <algorithm>

#include "ssh/shell_quote.h"

namespace dlaunch {
namespace {

// $1 directory, $2 temporary file, $3 destination, $4 expected SHA-256 (hex).
// When the file cannot be created or written (a full disk), stdin is still
// read to its end: the coordinator is blocked writing it, and would otherwise
// wait for a window that never opens instead of reading the exit status.
constexpr const char* kScript =
    "umask 077; "
    "mkdir -p \"$1\" && : > \"$2\" || { cat > /dev/null; exit 3; }; "
    "cat > \"$2\" || { rm -f \"$2\"; cat > /dev/null; exit 3; }; "
    "if command -v sha256sum > /dev/null 2>&1; then s=$(sha256sum < \"$2\"); "
    "elif command -v shasum > /dev/null 2>&1; then s=$(shasum -a 256 < \"$2\"); "
    "elif command -v openssl > /dev/null 2>&1; then s=$(openssl dgst -sha256 < \"$2\"); "
    "else rm -f \"$2\"; exit 4; fi; "
    "case \"$s\" in *\"$4\"*) ;; *) rm -f \"$2\"; exit 5;; esac; "
    "chmod 755 \"$2\" && mv -f \"$2\" \"$3\" || { rm -f \"$2\"; exit 6; }";

bool is_sha256_hex(const std::string& text) {
  return text.size() == 64 && std::all_of(text.begin(), text.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

std::string directory_of(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string trimmed(std::string_view text) {
  constexpr std::size_t kMaxShown = 600;
  std::string out(text.substr(0, kMaxShown));
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

}  // namespace

std::string exec_upload_command(const std::string& tmp, const std::string& dest,
                                const std::string& sha256) {
  // The hash is matched as a substring of the tool's output: an empty or
  // malformed one would match anything.
  if (!is_sha256_hex(sha256)) throw SshError("not a SHA-256 in lowercase hex: " + sha256);
  return "exec /bin/sh -c " + shell_quote(kScript) + " dlaunch-upload " +
         shell_quote(directory_of(dest)) + " " + shell_quote(tmp) + " " + shell_quote(dest) + " " +
         shell_quote(sha256);
}

std::string exec_upload_failure(int status, const std::string& dest, std::string_view stderr_text) {
  const std::string said = trimmed(stderr_text);
  const std::string detail = said.empty() ? "" : ": " + said;
  switch (static_cast<ExecUploadStatus>(status)) {
    case ExecUploadStatus::ok:
      return {};
    case ExecUploadStatus::cannot_write:
      return "cannot write " + dest + " (or its directory)" + detail;
    case ExecUploadStatus::no_checksum_tool:
      return "cannot verify the upload of " + dest +
             ": none of sha256sum, shasum or openssl is installed on the host (install "
             "coreutils for sha256sum)";
    case ExecUploadStatus::checksum_mismatch:
      return "the upload of " + dest +
             " arrived corrupted (its SHA-256 differs from this machine's copy); it was removed";
    case ExecUploadStatus::cannot_rename:
      return "cannot move the upload into place at " + dest + detail;
  }
  return "the upload of " + dest + " failed with exit status " + std::to_string(status) + detail;
}

void upload_over_exec(SshSession& s, std::string_view data, const std::string& tmp,
                      const std::string& dest, const std::string& sha256) {
  const std::string& label = s.target().label;
  const std::string command = exec_upload_command(tmp, dest, sha256);
  LIBSSH2_CHANNEL* channel = libssh2_channel_open_session(s.get());
  if (channel == nullptr) throw SshError(label + ": cannot open a channel: " + s.last_error());
  struct ChannelGuard {
    LIBSSH2_CHANNEL* c;
    ~ChannelGuard() { libssh2_channel_free(c); }
  } guard{channel};
  if (libssh2_channel_exec(channel, command.c_str()) != 0) {
    throw SshError(label + ": cannot run the upload command: " + s.last_error());
  }
  std::size_t sent = 0;
  while (sent < data.size()) {
    const ssize_t n = libssh2_channel_write(channel, data.data() + sent, data.size() - sent);
    if (n <= 0) break;
    sent += static_cast<std::size_t>(n);
  }
  // When the script stopped reading, its exit status and stderr say why;
  // when the connection failed (a timeout on a slow link), the write error
  // does, and the script's checksum mismatch is only its consequence.
  const bool cut_short = sent < data.size();
  const std::string write_error = cut_short ? s.last_error() : "";
  libssh2_channel_send_eof(channel);
  std::string err;
  char buffer[4096];
  for (;;) {
    const ssize_t n = libssh2_channel_read(channel, buffer, sizeof buffer);
    const ssize_t e = libssh2_channel_read_stderr(channel, buffer, sizeof buffer);
    if (e > 0 && err.size() < 64 * 1024) err.append(buffer, static_cast<std::size_t>(e));
    if (n <= 0 && e <= 0) break;
  }
  libssh2_channel_close(channel);
  const bool closed = libssh2_channel_wait_closed(channel) == 0;
  const int status = closed ? libssh2_channel_get_exit_status(channel) : -1;
  const auto said = static_cast<ExecUploadStatus>(status);
  if (cut_short &&
      (!closed || said == ExecUploadStatus::ok || said == ExecUploadStatus::checksum_mismatch)) {
    throw UploadCutShort(label + ": the upload of the agent to " + dest + " was cut short after " +
                         std::to_string(sent) + " of " + std::to_string(data.size()) +
                         " bytes: " + write_error);
  }
  if (!closed) {
    throw UploadCutShort(label + ": the upload of the agent to " + dest +
                         " did not finish: " + s.last_error());
  }
  if (said == ExecUploadStatus::no_checksum_tool) {
    throw ExecUploadUnverifiable(label + ": " + exec_upload_failure(status, dest, err));
  }
  if (status != 0) throw SshError(label + ": " + exec_upload_failure(status, dest, err));
}

}  // namespace dlaunch
