#include <doctest/doctest.h>

#include "ssh/config.h"

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

TEST_CASE("ssh config: comments start a word, a # inside a word is kept") {
  const auto cfg = SshConfig::parse(
      "# whole line\nHost a   # trailing comment\n  IdentityFile ~/.ssh/key#1\n"
      "  User bob #alice\n");
  const auto a = cfg.lookup("a");
  CHECK(a.identity_files == std::vector<std::string>{"~/.ssh/key#1"});
  CHECK(a.user == "bob");
  CHECK(cfg.lookup("#").user.empty());  // "# trailing comment" is no pattern
}

TEST_CASE("ssh config: a bad port is skipped, a later good one used") {
  const auto cfg = SshConfig::parse("Host a\n Port 22x\nHost a\n Port 70000\nHost *\n Port 2200\n");
  CHECK(cfg.lookup("a").port == 2200);
}

TEST_CASE("ssh config: Match blocks are skipped, Host blocks after them apply") {
  const auto cfg = SshConfig::parse(
      "Match exec \"true\"\n  User matched\nHost *.lab\n  User labuser\n  HostName %h.internal\n");
  const auto h = cfg.lookup("n1.lab");
  CHECK(h.user == "labuser");
  CHECK(h.hostname == "n1.lab.internal");
  const auto other = cfg.lookup("elsewhere");
  CHECK(other.user.empty());
  CHECK(other.hostname.empty());
  CHECK_FALSE(other.port.has_value());
}

TEST_CASE("ssh config: negated patterns alone match nothing; no file is an empty config") {
  const auto cfg = SshConfig::parse("Host !secret\n  User u\n");
  CHECK(cfg.lookup("public").user.empty());
  CHECK(SshConfig::parse("").lookup("x").identity_files.empty());
  CHECK(SshConfig::load("/nonexistent/ssh_config").lookup("x").user.empty());
}

TEST_CASE("ssh patterns: stars backtrack, ? needs a character") {
  CHECK(ssh_pattern_match("*.*.dc1", "a.b.c.dc1"));
  CHECK(ssh_pattern_match("a*b*c", "aXbYbZc"));
  CHECK_FALSE(ssh_pattern_match("a*b*c", "aXbYbZ"));
  CHECK(ssh_pattern_match("**", ""));
  CHECK_FALSE(ssh_pattern_match("?", ""));
  CHECK(ssh_pattern_match("10.0.?.*", "10.0.3.17"));
}

TEST_CASE("ssh config: ProxyJump, first value wins, none is kept as written") {
  const auto cfg = SshConfig::parse(
      "Host inner*\n  ProxyJump admin@bastion:2222,second\n"
      "Host direct\n  ProxyJump none\n"
      "Host *\n  ProxyJump everywhere\n");
  CHECK(cfg.lookup("inner1").proxy_jump == "admin@bastion:2222,second");
  CHECK(cfg.lookup("direct").proxy_jump == "none");
  CHECK(cfg.lookup("other").proxy_jump == "everywhere");
  CHECK(SshConfig::parse("Host a\n  User u\n").lookup("a").proxy_jump.empty());
}
