#include "common/agent_arch.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

using namespace dlaunch;
namespace fs = std::filesystem;

TEST_CASE("normalize_arch: the other names of the two architectures") {
  CHECK(normalize_arch("x86_64") == "x86_64");
  CHECK(normalize_arch("amd64") == "x86_64");
  CHECK(normalize_arch("aarch64") == "aarch64");
  CHECK(normalize_arch("arm64") == "aarch64");
  CHECK(normalize_arch("ppc64le") == "ppc64le");
  CHECK((native_arch() == "x86_64" || native_arch() == "aarch64"));
}

TEST_CASE("agents_by_arch: the native agent, and dlaunch-agent-<arch> beside it or in lib") {
  std::string tmpl = fs::temp_directory_path() / "dlaunch-arch-test-XXXXXX";
  const fs::path root = ::mkdtemp(tmpl.data());
  fs::create_directories(root / "bin");
  fs::create_directories(root / "lib/dlaunch");
  const auto touch = [](const fs::path& p) { std::ofstream(p) << "x"; };
  touch(root / "bin/dlaunch-agent");
  touch(root / "bin/dlaunch-agent-riscv64");
  touch(root / "lib/dlaunch/dlaunch-agent-aarch64");
  touch(root / "lib/dlaunch/dlaunch-agent-riscv64");       // the one beside wins
  fs::create_directories(root / "bin/dlaunch-agent-dir");  // not a file
  const std::string native = (root / "bin/dlaunch-agent").string();
  const auto agents = agents_by_arch(native, (root / "lib/dlaunch").string());
  CHECK(agents.at(std::string(native_arch())) == native);
  CHECK(agents.at("riscv64") == (root / "bin/dlaunch-agent-riscv64").string());
  if (native_arch() != "aarch64")
    CHECK(agents.at("aarch64") == (root / "lib/dlaunch/dlaunch-agent-aarch64").string());
  CHECK(agents.count("dir") == 0);
  CHECK(agents.size() == (native_arch() == "aarch64" ? 2U : 3U));
  // Without an extra directory, or with one that does not exist.
  CHECK(agents_by_arch(native, "").size() == 2);
  CHECK(agents_by_arch(native, (root / "nowhere").string()).size() == 2);
  fs::remove_all(root);
}

TEST_CASE("no_agent_message: names the host's architecture and those at hand") {
  const std::map<std::string, std::string> agents{{"x86_64", "/a"}, {"aarch64", "/b"}};
  const auto text = no_agent_message("ppc64le", agents);
  CHECK(text.find("the host is ppc64le") != std::string::npos);
  CHECK(text.find("aarch64, x86_64") != std::string::npos);
  CHECK(no_agent_message("", agents).find("unknown architecture") != std::string::npos);
}
