#include "ssh/agent_start.h"

#include "common/agent_arch.h"
#include "ssh/shell_quote.h"

namespace dlaunch {
namespace {

constexpr const char* kStarted = "dlaunch-start ";
constexpr const char* kMissing = "dlaunch-missing";
// What the shell may print before our line (a chatty .bashrc) is skipped, up to this much.
constexpr std::size_t kMaxPreamble = 64 * 1024;

std::string last_lines(const std::string& text, std::size_t max_chars) {
  std::string out = text;
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  if (out.size() > max_chars) out = "..." + out.substr(out.size() - max_chars);
  return out;
}

}  // namespace

std::string agent_start_command(const std::string& cache_dir,
                                const std::map<std::string, std::string>& sha256_by_arch,
                                const std::map<std::string, std::string>& environment) {
  std::string exported;
  for (const auto& [name, value] : environment)
    exported += name + "=" + shell_quote(value) + "; export " + name + "; ";
  // The host's `uname -m` picks the file; one it has no agent for is
  // reported as missing, with the architecture, and the uploader says so.
  std::string pick = exported + "m=$(uname -m); case \"$m\" in ";
  for (const auto& [arch, sha] : sha256_by_arch) {
    const std::string aliases = arch == "x86_64"    ? "x86_64|amd64"
                                : arch == "aarch64" ? "aarch64|arm64"
                                                    : arch;
    pick += aliases + ") n=agent-" + sha + ";; ";  // hex: nothing to quote
  }
  pick += "*) echo \"" + std::string(kMissing) + " $m\"; exit 0;; esac; ";
  // A copy in /tmp is only run from a directory that is ours and no symbolic
  // link, and only when the file is ours: another user could have made
  // /tmp/dlaunch-<uid> first and put a program there.
  // A /tmp copy that runs while the cache has none (a host where an upload
  // once failed) is copied into the cache on the host, and that copy runs
  // from then on: the cache is not left empty for good. A copy that lands
  // but does not run stays, and says "noexec" to later starts.
  const std::string script =
      pick +
      "runs() { test -f \"$1\" && \"$1\" --version >/dev/null 2>&1; }; "
      "start() { echo \"" +
      std::string(kStarted) +
      "$1\"; exec \"$1\"; }; "
      "fill() { test -e \"$2\" && return; (umask 077; mkdir -p \"${2%/*}\") 2>/dev/null; "
      "if cp \"$1\" \"$2.tmp-$$\" 2>/dev/null && mv -f \"$2.tmp-$$\" \"$2\" && runs \"$2\"; "
      "then start \"$2\"; fi; rm -f \"$2.tmp-$$\"; }; "
      "a=" +
      shell_quote(cache_dir) + "/$n; d=/tmp/dlaunch-$(id -u); t=$d/$n" +
      "; if runs \"$a\"; then start \"$a\"; fi; "
      "if test -d \"$d\" && test -O \"$d\" && test -O \"$t\"; then "
      "if test -L \"$d\"; then :; elif runs \"$t\"; then fill \"$t\" \"$a\"; start \"$t\"; fi; fi; "
      // Missing: say whether a copy is there that does not run (then uploading
      // it again would not help; it is tried once more, as another host that
      // shares the directory may have just renamed its upload into place),
      // else make the directory the upload goes to, sparing the upload a round
      // trip of its own.
      // Partial uploads that a dropped connection left behind (their host
      // end died before it could remove them) go once idle for 2 minutes: a
      // live upload writes to its file all along.
      "if test -f \"$a\"; then if runs \"$a\"; then start \"$a\"; fi; echo \"" +
      kMissing + " $m present\"; else (umask 077; mkdir -p \"${a%/*}\") 2>/dev/null; " +
      "find \"${a%/*}\" -maxdepth 1 -name \"agent-*.tmp-*\" -mmin +2 -exec rm -f {} + "
      "2>/dev/null; echo \"" +
      kMissing + " $m\"; fi";
  return "exec /bin/sh -c " + shell_quote(script);
}

AgentStart start_cached_agent(SshSession& s, const std::string& command) {
  const std::string& label = s.target().label;
  LIBSSH2_CHANNEL* channel = libssh2_channel_open_session(s.get());
  if (channel == nullptr) {
    throw SshError(label + ": cannot open an SSH channel: " + s.last_error());
  }
  if (libssh2_channel_exec(channel, command.c_str()) != 0) {
    const std::string why = s.last_error();
    libssh2_channel_free(channel);
    throw SshError(label + ": the host refused to run a command: " + why);
  }
  // Byte by byte: the line is short and comes from libssh2's buffer, and
  // whatever follows it belongs to the agent.
  std::string out, line;
  ssize_t n = 0;
  char c = 0;
  while (out.size() + line.size() < kMaxPreamble &&
         (n = libssh2_channel_read(channel, &c, 1)) == 1) {
    if (c != '\n') {
      line.push_back(c);
      continue;
    }
    if (line.rfind(kStarted, 0) == 0) return {channel, line.substr(std::string(kStarted).size())};
    if (line.rfind(kMissing, 0) == 0) break;
    out += line + "\n";
    line.clear();
  }
  const bool timed_out = n == LIBSSH2_ERROR_TIMEOUT;
  std::string err;
  char buffer[4096];
  ssize_t e = 0;
  while (!timed_out && (e = libssh2_channel_read_stderr(channel, buffer, sizeof buffer)) > 0) {
    err.append(buffer, static_cast<std::size_t>(e));
  }
  libssh2_channel_close(channel);
  if (!timed_out) libssh2_channel_wait_closed(channel);
  const int status = libssh2_channel_get_exit_status(channel);
  libssh2_channel_free(channel);
  if (line.rfind(kMissing, 0) == 0) {
    std::string arch = line.size() > std::string(kMissing).size() + 1
                           ? line.substr(std::string(kMissing).size() + 1)
                           : std::string();
    const auto space = arch.find(' ');
    const bool present = space != std::string::npos && arch.substr(space + 1) == "present";
    if (space != std::string::npos) arch.resize(space);
    return {nullptr, "", normalize_arch(arch), present};
  }
  std::string what = timed_out ? "no answer within " + std::to_string(s.target().timeout_s) + " s"
                     : n < 0   ? s.last_error()
                               : "exit status " + std::to_string(status);
  const std::string said = last_lines(err.empty() ? out + line : err, 600);
  throw SshError(label + ": the agent did not start (" + what + ")" +
                 (said.empty() ? "" : ": " + said) +
                 ". Check that /bin/sh works on the host and that your shell startup files "
                 "(~/.bashrc) do not fail or wait for input");
}

}  // namespace dlaunch
