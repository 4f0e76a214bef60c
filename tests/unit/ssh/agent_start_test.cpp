#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "common/agent_arch.h"
#include "ssh/agent_start.h"
#include "ssh/shell_quote.h"

using namespace dlaunch;

namespace {

const std::string kSha(64, 'a');
const std::string kArmSha(64, 'b');
// This machine's agent only, as most builds have.
const std::map<std::string, std::string> kNative{{std::string(native_arch()), kSha}};

// Runs the start command as sshd would (`sh -c <command>` in the home
// directory), with `input` on its stdin; returns its stdout.
// `machine`: what `uname -m` says there (a stand-in on PATH); empty: the real one.
std::string run_in(const std::string& home, const std::string& command, const std::string& input,
                   const std::string& machine = "") {
  const std::string in_file = home + "/stdin";
  std::ofstream(in_file) << input;
  std::string path_prefix;
  if (!machine.empty()) {
    std::filesystem::create_directories(home + "/fakebin");
    std::ofstream(home + "/fakebin/uname") << "#!/bin/sh\necho " << machine << "\n";
    ::chmod((home + "/fakebin/uname").c_str(), 0755);
    path_prefix = "PATH=" + shell_quote(home + "/fakebin") + ":\"$PATH\" ";
  }
  const std::string cmd = "cd " + shell_quote(home) + " && " + path_prefix + "/bin/sh -c " +
                          shell_quote(command) + " < stdin";
  FILE* p = ::popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  std::string out;
  char buf[256];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  ::pclose(p);
  return out;
}

// A stand-in agent: answers --version, else echoes its stdin.
void write_fake_agent(const std::string& path, bool version_ok) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path) << "#!/bin/sh\n"
                      << "if [ \"$1\" = --version ]; then echo dlaunch-agent; exit "
                      << (version_ok ? 0 : 1) << "; fi\n"
                      << "printf 'agent read: '; cat\n";
  ::chmod(path.c_str(), 0755);
}

struct TempHome {
  std::string path;
  TempHome() {
    std::string tmpl = std::filesystem::temp_directory_path() / "dlaunch-start-test-XXXXXX";
    path = ::mkdtemp(tmpl.data());
  }
  ~TempHome() { std::filesystem::remove_all(path); }
};

}  // namespace

TEST_CASE("agent start command: missing, then started from the cache after upload") {
  TempHome home;
  const std::string command = agent_start_command(".cache/dlaunch", kNative);
  CHECK(command.find('\n') == std::string::npos);  // one line, for csh
  CHECK(run_in(home.path, command, "spec") ==
        "dlaunch-missing " + std::string(native_arch()) + "\n");
  // The directory the upload goes to is made, private.
  struct stat st {};
  REQUIRE(::stat((home.path + "/.cache/dlaunch").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);
  write_fake_agent(home.path + "/.cache/dlaunch/agent-" + kSha, true);
  CHECK(run_in(home.path, command, "spec") ==
        "dlaunch-start .cache/dlaunch/agent-" + kSha + "\nagent read: spec");
}

TEST_CASE("agent start command: a copy that does not run is missing, and said to be there") {
  TempHome home;
  write_fake_agent(home.path + "/c/agent-" + kSha, false);
  CHECK(run_in(home.path, agent_start_command("c", kNative), "") ==
        "dlaunch-missing " + std::string(native_arch()) + " present\n");
}

TEST_CASE("agent start command: an odd cache directory is quoted") {
  TempHome home;
  const std::string dir = home.path + "/it's a $(dir)";
  write_fake_agent(dir + "/agent-" + kSha, true);
  CHECK(run_in(home.path, agent_start_command(dir, kNative), "x") ==
        "dlaunch-start " + dir + "/agent-" + kSha + "\nagent read: x");
}

TEST_CASE("agent start command: the host's uname -m picks the agent") {
  TempHome home;
  const std::map<std::string, std::string> both{{"x86_64", kSha}, {"aarch64", kArmSha}};
  const std::string command = agent_start_command(".cache/dlaunch", both);
  // Nothing cached yet: missing, and the architecture to upload for.
  CHECK(run_in(home.path, command, "", "aarch64") == "dlaunch-missing aarch64\n");
  CHECK(run_in(home.path, command, "", "arm64") == "dlaunch-missing arm64\n");
  CHECK(run_in(home.path, command, "", "x86_64") == "dlaunch-missing x86_64\n");
  write_fake_agent(home.path + "/.cache/dlaunch/agent-" + kArmSha, true);
  write_fake_agent(home.path + "/.cache/dlaunch/agent-" + kSha, true);
  CHECK(run_in(home.path, command, "s", "aarch64") ==
        "dlaunch-start .cache/dlaunch/agent-" + kArmSha + "\nagent read: s");
  CHECK(run_in(home.path, command, "s", "arm64") ==
        "dlaunch-start .cache/dlaunch/agent-" + kArmSha + "\nagent read: s");
  CHECK(run_in(home.path, command, "s", "amd64") ==
        "dlaunch-start .cache/dlaunch/agent-" + kSha + "\nagent read: s");
  // An architecture with no agent is missing whatever the cache holds.
  CHECK(run_in(home.path, command, "s", "riscv64") == "dlaunch-missing riscv64\n");
}

TEST_CASE("agent start command: partial uploads idle for minutes are removed, live ones kept") {
  TempHome home;
  const std::string dir = home.path + "/c";
  std::filesystem::create_directories(dir);
  const std::string idle = dir + "/agent-" + kSha + ".tmp-0a1b2c";
  const std::string live = dir + "/agent-" + kSha + ".tmp-3d4e5f";
  const std::string other = dir + "/notes.tmp-1";
  for (const auto& path : {idle, live, other}) std::ofstream(path) << "part";
  const auto ten_minutes_ago =
      std::filesystem::file_time_type::clock::now() - std::chrono::minutes(10);
  std::filesystem::last_write_time(idle, ten_minutes_ago);
  std::filesystem::last_write_time(other, ten_minutes_ago);
  CHECK(run_in(home.path, agent_start_command("c", kNative), "") ==
        "dlaunch-missing " + std::string(native_arch()) + "\n");
  CHECK_FALSE(std::filesystem::exists(idle));
  CHECK(std::filesystem::exists(live));
  CHECK(std::filesystem::exists(other));  // not ours
}
