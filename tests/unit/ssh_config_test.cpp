#include <doctest/doctest.h>

#include <random>

#include "launcher/shell_quote.h"
#include "launcher/ssh_config.h"

using namespace dlaunch;

TEST_CASE("ssh config: first value wins, patterns and negation") {
  const auto cfg = SshConfig::parse(R"(
# global
User everyone
Host gpu? !gpu9
  HostName %h.cluster.internal
  Port 2222
  IdentityFile ~/.ssh/gpu_key
Host gpu1
  User alice
  Port 22
Host *
  IdentityFile ~/.ssh/other
  User fallback
)");
  const auto g1 = cfg.lookup("gpu1");
  CHECK(g1.hostname == "gpu1.cluster.internal");
  CHECK(g1.port == 2222);        // the gpu? block comes first
  CHECK(g1.user == "everyone");  // settings before any Host apply to all, first
  CHECK(g1.identity_files == std::vector<std::string>{"~/.ssh/gpu_key", "~/.ssh/other"});
  const auto g9 = cfg.lookup("gpu9");
  CHECK(g9.hostname.empty());
  CHECK_FALSE(g9.port.has_value());
  CHECK(cfg.lookup("GPU2").port == 2222);  // host patterns are case-insensitive
}

TEST_CASE("ssh config: key=value and quoted values") {
  const auto cfg =
      SshConfig::parse("Host a\n  HostName=10.0.0.1\n  IdentityFile \"~/my keys/id\"\n");
  const auto a = cfg.lookup("a");
  CHECK(a.hostname == "10.0.0.1");
  CHECK(a.identity_files == std::vector<std::string>{"~/my keys/id"});
}

TEST_CASE("ssh patterns") {
  CHECK(ssh_pattern_match("*", "anything"));
  CHECK(ssh_pattern_match("node-*.dc1", "node-17.dc1"));
  CHECK_FALSE(ssh_pattern_match("node-*.dc1", "node-17.dc2"));
  CHECK(ssh_pattern_match("h?", "h1"));
  CHECK_FALSE(ssh_pattern_match("h?", "h10"));
}

TEST_CASE("shell quoting survives a POSIX shell for random bytes") {
  CHECK(shell_quote("plain") == "'plain'");
  CHECK(shell_quote("it's") == "'it'\\''s'");
  CHECK(shell_quote("") == "''");
  std::mt19937 rng(3);
  for (int i = 0; i < 50; ++i) {
    std::string s(rng() % 30, '\0');
    for (auto& c : s) c = static_cast<char>(1 + rng() % 255);
    // printf %s of the quoted word must give back the bytes exactly
    const std::string cmd = "printf %s " + shell_quote(s);
    FILE* p = ::popen(cmd.c_str(), "r");
    REQUIRE(p != nullptr);
    std::string got;
    char buf[256];
    std::size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) got.append(buf, n);
    ::pclose(p);
    CHECK(got == s);
  }
}
