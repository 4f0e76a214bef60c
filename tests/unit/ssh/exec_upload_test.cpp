#include <doctest/doctest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "protocol/sha256.h"
#include "ssh/exec_upload.h"
#include "ssh/shell_quote.h"
#include "tests/unit/scratch_dir.h"

using namespace dlaunch;
using dlaunch::testing::ScratchDir;
namespace fs = std::filesystem;

namespace {

std::string sha_of(const std::string& dir, const std::string& content) {
  const std::string file = dir + "/payload";
  std::ofstream(file, std::ios::binary) << content;
  return to_hex(sha256(content));
}

// Runs the command as sshd would (the login shell's `-c`, in the home
// directory) with `input` on stdin; `path` replaces $PATH when not empty.
int run_upload(const std::string& home, const std::string& command, const std::string& input,
               const std::string& path = "") {
  std::ofstream(home + "/stdin", std::ios::binary) << input;
  const std::string env = path.empty() ? "" : "PATH=" + shell_quote(path) + " ";
  const std::string cmd = "cd " + shell_quote(home) + " && " + env + "/bin/sh -c " +
                          shell_quote(command) + " < stdin 2>/dev/null";
  const int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// A directory for $PATH holding only the given tools from this machine.
std::string tools_dir(const std::string& parent, std::initializer_list<const char*> tools) {
  const std::string dir = parent + "/bin";
  fs::create_directories(dir);
  for (const char* tool : tools) {
    for (const char* where : {"/usr/bin/", "/bin/"}) {
      if (::access((std::string(where) + tool).c_str(), X_OK) == 0) {
        fs::create_symlink(std::string(where) + tool, dir + "/" + tool);
        break;
      }
    }
  }
  return dir;
}

bool has_tool(const char* tool) {
  return ::access((std::string("/usr/bin/") + tool).c_str(), X_OK) == 0;
}

}  // namespace

TEST_CASE("exec upload: stdin lands in place, executable, with no temporary file left") {
  ScratchDir home;
  const std::string content = "#!/bin/sh\necho agent\n" + std::string(200000, 'x');
  const std::string sha = sha_of(home.path(), content);
  const std::string dest = ".cache/dlaunch/agent-" + sha;
  const std::string command = exec_upload_command(dest + ".tmp-1", dest, sha);
  CHECK(command.find('\n') == std::string::npos);  // one line, for csh
  CHECK(command.find('!') == std::string::npos);   // no history expansion in csh
  CHECK(run_upload(home.path(), command, content) == 0);
  CHECK(read_file(home.path() + "/" + dest) == content);
  struct stat st {};
  REQUIRE(::stat((home.path() + "/" + dest).c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0755);
  REQUIRE(::stat((home.path() + "/.cache/dlaunch").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);  // a new cache directory is private
  CHECK(!fs::exists(home.path() + "/" + dest + ".tmp-1"));
}

TEST_CASE("exec upload: a corrupted transfer is removed, never renamed into place") {
  ScratchDir home;
  const std::string sha = sha_of(home.path(), "the real agent");
  const std::string dest = home.path() + "/c/agent";
  CHECK(run_upload(home.path(), exec_upload_command(dest + ".tmp", dest, sha), "something else") ==
        static_cast<int>(ExecUploadStatus::checksum_mismatch));
  CHECK(!fs::exists(dest));
  CHECK(!fs::exists(dest + ".tmp"));
}

TEST_CASE("exec upload: odd paths are quoted") {
  ScratchDir home;
  const std::string sha = sha_of(home.path(), "data");
  const std::string dir = home.path() + "/it's a $(touch pwned) `dir`";
  const std::string dest = dir + "/agent";
  CHECK(run_upload(home.path(), exec_upload_command(dest + ".tmp", dest, sha), "data") == 0);
  CHECK(read_file(dest) == "data");
  CHECK(!fs::exists(home.path() + "/pwned"));
}

TEST_CASE("exec upload: a destination that cannot be written still reads stdin to its end") {
  ScratchDir home;
  const std::string sha = sha_of(home.path(), "data");
  // /dev/null is no directory; the script must drain stdin (the coordinator is
  // writing it) and report, not hang.
  CHECK(run_upload(home.path(), exec_upload_command("/dev/null/x/a.tmp", "/dev/null/x/a", sha),
                   std::string(1 << 20, 'd')) == static_cast<int>(ExecUploadStatus::cannot_write));
}

TEST_CASE("exec upload: a write that fails midway (a full disk) reads stdin to its end too") {
  if (::access("/dev/full", W_OK) != 0) return;
  ScratchDir home;
  const std::string sha = sha_of(home.path(), "data");
  // The temporary name is a link to /dev/full: it opens, and every write fails.
  const std::string tmp = home.path() + "/agent.tmp";
  fs::create_symlink("/dev/full", tmp);
  CHECK(run_upload(home.path(), exec_upload_command(tmp, home.path() + "/agent", sha),
                   std::string(1 << 20, 'd')) == static_cast<int>(ExecUploadStatus::cannot_write));
  CHECK(!fs::is_symlink(tmp));  // the script removed its (partial) file
  CHECK(fs::exists("/dev/full"));
  CHECK(!fs::exists(home.path() + "/agent"));
}

TEST_CASE("exec upload: falls back to shasum, then openssl, and says when none is there") {
  ScratchDir home;
  const std::string sha = sha_of(home.path(), "data");
  const auto basic = {"cat", "mkdir", "rm", "chmod", "mv"};
  SUBCASE("openssl only") {
    if (!has_tool("openssl")) return;
    const std::string bin =
        tools_dir(home.path(), {"cat", "mkdir", "rm", "chmod", "mv", "openssl"});
    const std::string dest = home.path() + "/o/agent";
    CHECK(run_upload(home.path(), exec_upload_command(dest + ".t", dest, sha), "data", bin) == 0);
    CHECK(read_file(dest) == "data");
    CHECK(run_upload(home.path(), exec_upload_command(dest + ".t", dest + "2", sha), "bad", bin) ==
          static_cast<int>(ExecUploadStatus::checksum_mismatch));
  }
  SUBCASE("shasum only") {
    if (!has_tool("shasum")) return;
    // shasum is a Perl script: it needs perl on PATH too.
    const std::string bin =
        tools_dir(home.path(), {"cat", "mkdir", "rm", "chmod", "mv", "shasum", "perl"});
    const std::string dest = home.path() + "/s/agent";
    CHECK(run_upload(home.path(), exec_upload_command(dest + ".t", dest, sha), "data", bin) == 0);
    CHECK(read_file(dest) == "data");
  }
  SUBCASE("none") {
    const std::string bin = tools_dir(home.path(), basic);
    const std::string dest = home.path() + "/n/agent";
    CHECK(run_upload(home.path(), exec_upload_command(dest + ".t", dest, sha), "data", bin) ==
          static_cast<int>(ExecUploadStatus::no_checksum_tool));
    CHECK(!fs::exists(dest));
    CHECK(!fs::exists(dest + ".t"));
  }
}

TEST_CASE("exec upload: failures are explained") {
  const std::string none =
      exec_upload_failure(static_cast<int>(ExecUploadStatus::no_checksum_tool), "/x/agent", "");
  CHECK(none.find("sha256sum") != std::string::npos);
  CHECK(none.find("shasum") != std::string::npos);
  CHECK(none.find("openssl") != std::string::npos);
  CHECK(exec_upload_failure(static_cast<int>(ExecUploadStatus::cannot_write), "/x/agent",
                            "mkdir: Permission denied\n") ==
        "cannot write /x/agent (or its directory): mkdir: Permission denied");
  CHECK(exec_upload_failure(127, "/x/agent", "sh: not found").find("exit status 127") !=
        std::string::npos);
}

TEST_CASE("exec upload: a malformed hash is refused before anything runs") {
  CHECK_THROWS_AS(exec_upload_command("a.tmp", "a", ""), SshError);
  CHECK_THROWS_AS(exec_upload_command("a.tmp", "a", std::string(64, 'A')), SshError);
}
