// DESIGN.md: everything dlaunch prints goes through Console, threads and
// helper processes (the rendezvous relays) included, so that a detached
// coordinator's file and a test's capture hold all of it. Only the agent's
// own default sink (common/log.cpp, where no Console is set up) and its
// main() before anything runs write stderr themselves.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

const std::set<std::string> kAllowed = {"common/console.cpp", "common/log.cpp", "agent/main.cpp"};

}  // namespace

TEST_CASE("no product source prints to stderr outside the one output path") {
  namespace fs = std::filesystem;
  const fs::path root = DLAUNCH_SOURCE_DIR;
  std::vector<std::string> offenders;
  for (const char* part : {"agent", "common", "launcher", "net", "protocol", "rendezvous", "ssh"}) {
    for (const auto& entry : fs::recursive_directory_iterator(root / part)) {
      if (!entry.is_regular_file() || entry.path().extension() != ".cpp") continue;
      const std::string rel = fs::relative(entry.path(), root).string();
      if (kAllowed.count(rel) != 0) continue;
      std::ifstream in(entry.path());
      std::ostringstream text;
      text << in.rdbuf();
      const std::string body = text.str();
      for (const char* pattern : {"fprintf(stderr", "std::cerr", "fputs(stderr"}) {
        if (body.find(pattern) != std::string::npos) offenders.push_back(rel + ": " + pattern);
      }
    }
  }
  CHECK(offenders == std::vector<std::string>{});
}
